/**
 * The access policy at a partner's scale: a policy of 10,000 scopes and 2,000
 * grants (about 500 KB) against one of 2 grants. What a cold instance pays to
 * load and check it (in a fresh process, for an honest heap figure), and what
 * a hot vend (an L1 hit through the whole vend path) pays with it.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { StaticCredentials } from '../functions/adapters/credentials.js';
import { DynamoDbTokenStore } from '../functions/adapters/dynamodb-token-store.js';
import { AesGcmSealer } from '../functions/adapters/sealers.js';
import { AccessPolicy } from '../functions/core/access-policy.js';
import { systemClock } from '../functions/core/clock.js';
import { fixedPolicy } from '../functions/core/policy-source.js';
import { createVendRuntime, type VendRuntime } from '../functions/vend-token/runtime.js';
import { DEMO_PROVIDER_CREDENTIALS } from '../local/provider-simulator.js';
import { LARGE_GRANTS, LARGE_SCOPES, policyDocument } from './policy-document.js';
import { percentile } from './stats.js';
import { CALLER_ARN, countingClient, discardingLogger, SCOPES, type World } from './world.js';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..');
const TSX_LOADER = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
/** Interleaved rounds of hot vends, each round this many vends per policy. */
const ROUNDS = 40;
const PER_ROUND = 250;

export interface PolicyScaleResult {
  readonly documentBytes: number;
  readonly scopes: number;
  readonly grants: number;
  /** One load and check in a fresh process (a cold instance). */
  readonly loadColdMs: number;
  /** The same again in that process (a reload). */
  readonly loadWarmMs: number;
  /** Heap grown by the load, before any collection (at least its peak). */
  readonly loadHeapBytes: number;
  /** Heap the loaded policy keeps. */
  readonly retainedHeapBytes: number;
  /** Hot vend (L1 hit through the vend path), median of per-round means, ms. */
  readonly hotVendSmallMs: number;
  readonly hotVendLargeMs: number;
  readonly hotVendRatio: number;
}

function vendEvent(scope: string) {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: '/token',
    rawQueryString: `scope=${scope}`,
    headers: { host: 'bench.lambda-url.us-east-1.on.aws' },
    requestContext: {
      http: { method: 'GET', path: '/token' },
      authorizer: { iam: { userArn: CALLER_ARN } },
    },
    isBase64Encoded: false,
  } as unknown as Parameters<VendRuntime['app']>[0];
}

export async function policyScale(world: World): Promise<PolicyScaleResult> {
  const granted = [...SCOPES];
  const large = policyDocument({ scopes: LARGE_SCOPES, grants: LARGE_GRANTS, granted });
  const small = policyDocument({ scopes: granted.length, grants: 2, granted });

  const dir = await mkdtemp(join(tmpdir(), 'tvf-policy-'));
  let load: { coldMs: number; warmMs: number; peakBytes: number; retainedBytes: number };
  try {
    const file = join(dir, 'policy.json');
    await writeFile(file, large);
    const { stdout } = await run(process.execPath, [
      '--expose-gc',
      '--import',
      TSX_LOADER,
      join(ROOT, 'bench/policy-load-probe.ts'),
      file,
    ]);
    load = JSON.parse(stdout);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }

  // Two instances over one table and provider, differing only in the policy.
  const table = await world.newTable();
  const db = countingClient(world);
  const sealer = new AesGcmSealer(Buffer.alloc(32, 7));
  const instance = (text: string) =>
    createVendRuntime({
      store: new DynamoDbTokenStore(db.client, table),
      sealer,
      credentials: new StaticCredentials({ ...DEMO_PROVIDER_CREDENTIALS, version: 'bench' }),
      provider: { baseUrl: world.sim.url, unscopedScopeMode: 'omit' },
      policy: fixedPolicy(AccessPolicy.parse(text)),
      logger: discardingLogger(),
      clock: systemClock,
    });
  const runtimes = { small: instance(small), large: instance(large) };
  const scope = granted[0] as string;
  // Fill each instance's L1; then every vend below is a hot one.
  for (const runtime of Object.values(runtimes)) {
    for (let i = 0; i < 200; i++) await runtime.app(vendEvent(scope));
  }
  const means = { small: [] as number[], large: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? (['small', 'large'] as const) : (['large', 'small'] as const);
    for (const which of order) {
      const started = performance.now();
      for (let i = 0; i < PER_ROUND; i++) await runtimes[which].app(vendEvent(scope));
      means[which].push((performance.now() - started) / PER_ROUND);
    }
  }
  const hotVendSmallMs = percentile(means.small, 50);
  const hotVendLargeMs = percentile(means.large, 50);
  return {
    documentBytes: large.length,
    scopes: LARGE_SCOPES,
    grants: LARGE_GRANTS,
    loadColdMs: load.coldMs,
    loadWarmMs: load.warmMs,
    loadHeapBytes: load.peakBytes,
    retainedHeapBytes: load.retainedBytes,
    hotVendSmallMs,
    hotVendLargeMs,
    hotVendRatio: hotVendLargeMs / hotVendSmallMs,
  };
}
