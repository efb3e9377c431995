/**
 * The bench's workloads, each run once per variant against a fresh table:
 * cold stampedes, a simulated day, and the latency cases.
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { epochSeconds } from '../functions/core/clock.js';
import { TestClock } from '../test/support/clock.js';
import { REFRESH_AHEAD_SECONDS, REFRESH_INTERVAL_SECONDS, type VariantName } from './names.js';
import { type Summary, seededRandom, summarize } from './stats.js';
import {
  type BenchInstance,
  createVariant,
  timedVend,
  type Variant,
  type VendRecord,
  WAITED_ON_PROVIDER,
} from './variants.js';
import { countingClient, SCOPES, type World } from './world.js';

/** Loopback answers in about a millisecond; a real provider takes longer. */
export const PROVIDER_LATENCY_MS = 100;
export const INSTANCES = 50;
const MIN_TTL = 300;

/** What every workload reports per variant. */
export interface RunResult {
  readonly vends: number;
  /** Vends answered other than 200, by label. */
  readonly errors: Record<string, number>;
  /** Token requests the provider received. */
  readonly mints: number;
  readonly maxMintsPerScope: number;
  readonly dynamoCallsPerVend: number;
  readonly latency: Summary;
  /** Vends by how they were served. */
  readonly served: Record<string, number>;
  /** Latency by how the vend was served: e.g. the callers that minted against those that waited. */
  readonly latencyByServed: Record<string, Summary>;
  /** Vends served a token that was expired, short of min_ttl, or of another scope. */
  readonly badTokens: number;
  /** GetItem polls per lease wait (the product only; a wait's first read is not counted). */
  readonly pollsPerWaiter?: number;
}

export interface StampedeResult extends RunResult {
  readonly scopes: number;
  readonly requestsPerScope: number;
  /**
   * Stampedes pooled into this result: `vends` is one stampede's requests,
   * latencies and tallies cover every run's, and `mints` and
   * `maxMintsPerScope` are the worst single run's.
   */
  readonly runs: number;
}

/** One cold stampede, with its records kept for pooling. */
export interface StampedeRun {
  readonly result: StampedeResult;
  readonly records: readonly VendRecord[];
  readonly dynamoCalls: number;
  readonly waits?: { readonly waits: number; readonly polls: number };
}

export interface DayResult extends RunResult {
  /** Vends that waited on the provider after their scope's first mint. */
  readonly waitedAfterFirstMint: number;
  /**
   * Vends, after their scope's first mint, served a token already inside its
   * refresh-ahead window: the scheduled refresh let an in-use scope get there.
   */
  readonly servedInRefreshWindow: number;
  readonly instancesStarted: number;
}

interface Setup {
  readonly variant: Variant;
  readonly clock: TestClock;
  readonly table: string;
}

async function setUp(world: World, name: VariantName, providerLatencyMs: number): Promise<Setup> {
  const table = await world.newTable();
  world.sim.reset();
  if (providerLatencyMs > 0) {
    world.sim.injectTokenFault({ kind: 'latency', ms: providerLatencyMs }, Infinity);
  }
  const clock = new TestClock();
  return {
    variant: createVariant({ name, world, table, sim: world.sim, clock }),
    clock,
    table,
  };
}

function tally(records: readonly VendRecord[], key: (r: VendRecord) => string) {
  const counts: Record<string, number> = {};
  for (const record of records) counts[key(record)] = (counts[key(record)] ?? 0) + 1;
  return counts;
}

/** A token that must never be served: expired, short of min_ttl, or of another scope. */
function isBad(record: VendRecord, scope: string, now: number): boolean {
  if (record.status !== 200) return false;
  return (record.expiresAt ?? 0) - now <= MIN_TTL || record.scope !== scope;
}

function summarizeRun(
  world: World,
  variant: Variant,
  records: readonly VendRecord[],
  badTokens: number,
): RunResult {
  const mintsByScope = Object.values(world.sim.stats.tokenRequestsByScope);
  return {
    vends: records.length,
    mints: world.sim.stats.tokenRequests,
    maxMintsPerScope: Math.max(0, ...mintsByScope),
    dynamoCallsPerVend: variant.vendDynamoCalls() / records.length,
    ...summarizeRecords(records, badTokens),
    ...pollsPerWaiter(variant),
  };
}

/** What the records alone tell: errors, latency, and how vends were served. */
function summarizeRecords(records: readonly VendRecord[], badTokens: number) {
  return {
    errors: tally(
      records.filter((r) => r.status !== 200),
      (r) => r.label,
    ),
    latency: summarize(records.map((r) => r.ms)),
    served: tally(records, (r) => r.label),
    latencyByServed: Object.fromEntries(
      [...new Set(records.map((r) => r.label))].map((label) => [
        label,
        summarize(records.filter((r) => r.label === label).map((r) => r.ms)),
      ]),
    ),
    badTokens,
  };
}

function pollsPerWaiter(variant: Variant): { pollsPerWaiter?: number } {
  const waits = variant.leaseWaits?.();
  return waits && waits.waits > 0 ? { pollsPerWaiter: waits.polls / waits.waits } : {};
}

/**
 * Cold stampede: `requestCount` concurrent requests from 50 cold instances at
 * once, round-robin: request k asks for scope k mod n on instance k mod 50
 * (one scope: 10 requests per instance; 20 scopes: each instance serves 2
 * scopes, each scope is asked on 5 instances).
 */
export async function coldStampede(
  world: World,
  name: VariantName,
  scopes: readonly string[],
  requestCount: number,
): Promise<StampedeRun> {
  const { variant, clock } = await setUp(world, name, PROVIDER_LATENCY_MS);
  const instances = Array.from({ length: INSTANCES }, () => variant.instance());
  const requests = Array.from({ length: requestCount }, (_, k) => ({
    scope: scopes[k % scopes.length]!,
    instance: instances[k % INSTANCES]!,
  }));
  const records = await Promise.all(requests.map((r) => timedVend(r.instance, r.scope)));
  const now = epochSeconds(clock);
  const bad = records.filter((r, i) => isBad(r, requests[i]!.scope, now)).length;
  const waits = variant.leaseWaits?.();
  return {
    result: {
      ...summarizeRun(world, variant, records, bad),
      scopes: scopes.length,
      requestsPerScope: requestCount / scopes.length,
      runs: 1,
    },
    records,
    dynamoCalls: variant.vendDynamoCalls(),
    ...(waits ? { waits } : {}),
  };
}

/**
 * Several stampedes of one shape as one result: the latency percentiles of
 * all their vends (one stampede's p50 moves by 10 % from run to run on two
 * shared cores), the worst run's mints.
 */
export function pooled(runs: readonly StampedeRun[]): StampedeResult {
  const first = runs[0];
  if (!first) throw new Error('no stampede to pool');
  const records = runs.flatMap((run) => run.records);
  const sum = (pick: (run: StampedeRun) => number) =>
    runs.reduce((total, run) => total + pick(run), 0);
  const waits = sum((run) => run.waits?.waits ?? 0);
  return {
    ...first.result,
    ...summarizeRecords(
      records,
      sum((run) => run.result.badTokens),
    ),
    vends: first.result.vends,
    runs: runs.length,
    mints: Math.max(...runs.map((run) => run.result.mints)),
    maxMintsPerScope: Math.max(...runs.map((run) => run.result.maxMintsPerScope)),
    dynamoCallsPerVend: sum((run) => run.dynamoCalls) / records.length,
    ...(waits > 0 ? { pollsPerWaiter: sum((run) => run.waits?.polls ?? 0) / waits } : {}),
  };
}

/** Simulated seconds between two vends of the day's steady traffic. */
export const DAY_STEP_SECONDS = 10;
export const DAY_SECONDS = 86_400;

/**
 * A simulated day of steady traffic: a vend every 10 s, of a random scope of
 * 20 on a random instance of 50; each instance lives 30 min to 2 h (as Lambda
 * recycles them) and is then replaced by a cold one; the scheduled refresh
 * runs every 5 minutes (the product only). Seeded, so every variant sees the
 * same traffic.
 */
export async function simulatedDay(world: World, name: VariantName): Promise<DayResult> {
  const { variant, clock } = await setUp(world, name, 0);
  const random = seededRandom(20_260_101);
  const lifetime = () => 1800 + Math.floor(random() * 5400);
  let started = 0;
  const spawn = (at: number) => {
    started++;
    return { instance: variant.instance(), diesAt: at + lifetime() };
  };
  const slots: Array<{ instance: BenchInstance; diesAt: number }> = Array.from(
    { length: INSTANCES },
    () => spawn(0),
  );
  const minted = new Set<string>();
  const records: VendRecord[] = [];
  let bad = 0;
  let waitedAfterFirstMint = 0;
  let servedInRefreshWindow = 0;
  for (let t = 0; t < DAY_SECONDS; t += DAY_STEP_SECONDS) {
    if (t % REFRESH_INTERVAL_SECONDS === 0) await variant.scheduledRefresh?.();
    const index = Math.floor(random() * INSTANCES);
    const scope = SCOPES[Math.floor(random() * SCOPES.length)]!;
    if (slots[index]!.diesAt <= t) slots[index] = spawn(t);
    const record = await timedVend(slots[index]!.instance, scope, MIN_TTL);
    records.push(record);
    if (isBad(record, scope, epochSeconds(clock))) bad++;
    const left = (record.expiresAt ?? 0) - epochSeconds(clock);
    if (minted.has(scope) && record.status === 200 && left <= REFRESH_AHEAD_SECONDS) {
      servedInRefreshWindow++;
    }
    if (WAITED_ON_PROVIDER.has(record.label)) {
      if (minted.has(scope)) waitedAfterFirstMint++;
      minted.add(scope);
    }
    clock.advance(DAY_STEP_SECONDS);
  }
  return {
    ...summarizeRun(world, variant, records, bad),
    waitedAfterFirstMint,
    servedInRefreshWindow,
    instancesStarted: started,
  };
}

export interface LatencyResult {
  readonly l1?: Summary;
  readonly l2?: Summary;
  /** A bare consistent GetItem of the same item, measured interleaved with the L2 hits. */
  readonly bareGetItem?: Summary;
  /** A caller on another instance arriving while one refreshes (provider latency 100 ms). */
  readonly duringRefresh: Summary;
  /** How the callers arriving during a refresh were served. */
  readonly duringRefreshServed: Record<string, number>;
}

const L1_SAMPLES = 5000;
const L2_SAMPLES = 1000;
const WARM_UP = 200;
const REFRESH_ROUNDS = 20;

/** Latency of the cases a caller meets, one vend at a time. */
export async function latency(world: World, name: VariantName): Promise<LatencyResult> {
  const { variant, clock, table } = await setUp(world, name, 0);
  const scope = SCOPES[0]!;
  const bare = countingClient(world);
  const instance = variant.instance();
  await timedVend(instance, scope);

  const l1: number[] = [];
  // Without a cache every vend mints: there is no hit to time.
  for (let i = 0; name !== 'no-cache' && i < WARM_UP + L1_SAMPLES; i++) {
    const record = await timedVend(instance, scope);
    if (i >= WARM_UP && record.label === 'l1') l1.push(record.ms);
  }

  const l2: number[] = [];
  const get: number[] = [];
  const getItem = new GetItemCommand({
    TableName: table,
    Key: { pk: { S: `TOKEN#${scope}` } },
    ConsistentRead: true,
  });
  if (name === 'ours' || name === 'dynamodb-no-lease') {
    for (let i = 0; i < WARM_UP + L2_SAMPLES; i++) {
      instance.forget();
      const record = await timedVend(instance, scope);
      const started = performance.now();
      await bare.client.send(getItem);
      const ms = performance.now() - started;
      if (i < WARM_UP) continue;
      if (record.label === 'l2') l2.push(record.ms);
      get.push(ms);
    }
  }

  // The caller during a refresh: the product refreshes inside its 900 s
  // window (800 s left); the baselines only once a token cannot serve
  // min_ttl (250 s left). One caller starts the refresh, another arrives
  // on another instance 20 ms later, and is timed.
  world.sim.injectTokenFault({ kind: 'latency', ms: PROVIDER_LATENCY_MS }, Infinity);
  const during: VendRecord[] = [];
  for (let round = 0; round < REFRESH_ROUNDS; round++) {
    const current = await timedVend(variant.instance(), scope);
    const left = name === 'ours' ? 800 : 250;
    clock.advance((current.expiresAt ?? 0) - epochSeconds(clock) - left);
    const refreshing = timedVend(variant.instance(), scope);
    await new Promise((resolve) => setTimeout(resolve, 20));
    during.push(await timedVend(variant.instance(), scope));
    await refreshing;
  }
  world.sim.clearFaults();
  return {
    ...(l1.length > 0 ? { l1: summarize(l1) } : {}),
    ...(l2.length > 0 ? { l2: summarize(l2), bareGetItem: summarize(get) } : {}),
    duringRefresh: summarize(during.map((r) => r.ms)),
    duringRefreshServed: tally(during, (r) => r.label),
  };
}
