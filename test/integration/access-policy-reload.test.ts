/**
 * The access policy as run-time configuration, through the vend API: a new
 * version takes effect within POLICY_MAX_AGE_SECONDS, an invalid one is never
 * used (the last good one stays, logged and counted), and a cold start with no
 * valid policy refuses every vend (503 with Retry-After), never grants one.
 * The store is a document in memory, as AppConfig or a file would hold it;
 * the clock is injected.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { describe, expect, it } from 'vitest';
import {
  type FetchedDocument,
  type PolicyMetric,
  PolicySource,
} from '../../functions/core/policy-source.js';
import { captureOutput } from '../support/capture-output.js';
import { TestClock } from '../support/clock.js';
import { useSimulatorAndTable } from '../support/simulator-and-table.js';
import { CALLER_ARN, makeInstance, urlEvent, vend } from '../support/vend-harness.js';

const shared = useSimulatorAndTable();

const CHECKOUT = 'arn:aws:iam::111122223333:role/checkout';
const granted = JSON.stringify({
  scopes: ['ba_demo_1'],
  grants: [{ principal: CHECKOUT, scopes: ['ba_demo_1'] }],
});
const revoked = JSON.stringify({ scopes: ['ba_demo_1'], grants: [] });

function world(options: { maxAgeSeconds?: number; initial?: string | Error; logs?: boolean } = {}) {
  const clock = new TestClock({ virtualSleep: true, frozenAt: 1_800_000_000_000 });
  const store: { document: string | Error; version?: string; fetches: number } = {
    document: options.initial ?? granted,
    fetches: 0,
  };
  const counted: PolicyMetric[] = [];
  const logger = new Logger({ serviceName: 'test', logLevel: options.logs ? 'INFO' : 'SILENT' });
  const policy = new PolicySource({
    fetch: async (): Promise<FetchedDocument> => {
      store.fetches += 1;
      if (store.document instanceof Error) throw store.document;
      return {
        text: store.document,
        ...(store.version === undefined ? {} : { version: store.version }),
      };
    },
    source: 'test store',
    maxAgeSeconds: options.maxAgeSeconds ?? 60,
    clock,
    logger,
    count: (metric) => counted.push(metric),
  });
  const instance = makeInstance({
    sim: shared.sim,
    clock,
    client: shared.client,
    table: shared.table,
    policy,
  });
  const ask = async () =>
    (await vend(instance, urlEvent({ query: 'scope=ba_demo_1', arn: CALLER_ARN }))).status;
  return { clock, store, counted, policy, ask };
}

describe('access policy changes at run time', () => {
  it('revokes a grant within POLICY_MAX_AGE_SECONDS, and grants it back as fast', async () => {
    const w = world({ maxAgeSeconds: 60 });
    expect(await w.ask()).toBe(200);

    w.store.document = revoked;
    w.clock.advance(59);
    const beforeTheBound = await w.ask();
    w.clock.advance(1);
    const atTheBound = await w.ask();
    w.store.document = granted;
    w.clock.advance(60);
    const grantedAgain = await w.ask();

    // The token the caller was served earlier is in L1; the grant is checked first.
    expect(beforeTheBound).toBe(200);
    expect(atTheBound).toBe(403);
    expect(grantedAgain).toBe(200);
  });

  it('asks the store at most once per max age, however many vends', async () => {
    const w = world({ maxAgeSeconds: 60 });
    await Promise.all(Array.from({ length: 20 }, () => w.ask()));
    w.clock.advance(30);
    await w.ask();
    w.clock.advance(30);
    await Promise.all(Array.from({ length: 5 }, () => w.ask()));

    expect(w.store.fetches).toBe(2);
  });

  it('never uses an invalid version: the last good one stays, logged with every problem and counted', async () => {
    const w = world({ logs: true });
    expect(await w.ask()).toBe(200);
    const output = captureOutput();
    try {
      w.store.document = JSON.stringify({
        scopes: ['ba_demo_1'],
        grants: [{ principal: 'checkout', scopes: ['ba_other'] }],
      });
      w.store.version = '7';
      w.clock.advance(60);
      // Still the last good policy: the caller is still granted.
      expect(await w.ask()).toBe(200);
    } finally {
      output.restore();
    }

    expect(w.counted).toEqual(['PolicyRejected']);
    const line = JSON.parse(
      output
        .text()
        .split('\n')
        .find((l) => l.includes('access policy rejected')) as string,
    );
    expect(line).toMatchObject({
      level: 'ERROR',
      version: '7',
      keeping: expect.stringMatching(/^sha256:/),
    });
    expect(line.problems).toContain('grants.0.principal: must be an IAM role ARN');
    expect(line.problems).toContain('"ba_other" is not listed in scopes');
    expect((await w.policy.current()).version).toMatch(/^sha256:[0-9a-f]{12}$/);
  });

  it('keeps the last good policy while the store cannot be reached, and counts it', async () => {
    const w = world();
    expect(await w.ask()).toBe(200);
    w.store.document = new Error('AppConfig is down');
    w.clock.advance(60);

    expect(await w.ask()).toBe(200);
    expect(w.counted).toEqual(['PolicyFetchFailures']);
  });

  it.each([
    // Asked again after a second: the next try may reach it.
    ['the store cannot be reached', new Error('AppConfig is down'), 1],
    // Asked again after the max age: a store that answered (AppConfig) answers no sooner.
    ['the only version is invalid', '{"scopes":["ba demo"],"grants":[]}', 60],
  ])(
    'refuses every vend at a cold start where %s: 503 with Retry-After, never a grant',
    async (_label, initial, retryAfter) => {
      const w = world({ initial });
      const output = captureOutput();
      let answer: Awaited<ReturnType<typeof vend>>;
      let health: Awaited<ReturnType<typeof vend>>;
      try {
        answer = await vend(makeInstanceOf(w), urlEvent({ query: 'scope=ba_demo_1' }));
        health = await vend(makeInstanceOf(w), urlEvent({ path: '/healthz' }));
      } finally {
        output.restore();
      }

      expect(answer.status).toBe(503);
      expect(answer.body.code).toBe('upstream_unavailable');
      expect(Number(answer.headers['retry-after'])).toBe(retryAfter);
      expect(shared.sim.stats.tokenRequests).toBe(0);
      // The health check needs no policy.
      expect(health.status).toBe(200);

      // Once a valid version is there, the next try after Retry-After loads it.
      w.store.document = granted;
      w.clock.advance(retryAfter - 1);
      expect(await w.ask()).toBe(503);
      w.clock.advance(1);
      expect(await w.ask()).toBe(200);
    },
  );
});

/** A second instance over the same policy source (the first is `w.ask`'s). */
function makeInstanceOf(w: ReturnType<typeof world>) {
  return makeInstance({
    sim: shared.sim,
    clock: w.clock,
    client: shared.client,
    table: shared.table,
    policy: w.policy,
  });
}
