import { describe, expect, it } from 'vitest';
import { DynamoDbTokenStore } from '../../functions/adapters/dynamodb-token-store.js';
import { AccessPolicy } from '../../functions/core/access-policy.js';
import { fixedPolicy } from '../../functions/core/policy-source.js';
import type { TokenService } from '../../functions/core/token-service.js';
import {
  LONGEST_REFRESH_MS,
  refreshStartDeadline,
  runScheduledRefresh,
  scheduledRefreshDueWithin,
} from '../../functions/refresh/scheduled-refresh.js';
import { TestClock } from '../support/clock.js';
import { useSimulatorAndTable } from '../support/simulator-and-table.js';
import { makeInstance, quietLogger, urlEvent, vend } from '../support/vend-harness.js';

const shared = useSimulatorAndTable();

const SCOPES = Array.from({ length: 20 }, (_, i) => `ba_scale_${String(i).padStart(2, '0')}`);
const POLICY = AccessPolicy.parse(
  JSON.stringify({
    scopes: SCOPES,
    grants: [{ principal: 'arn:aws:iam::111122223333:role/checkout', scopes: ['*'] }],
  }),
);

/**
 * Every scope cached and in use, minted a second apart in reverse name order
 * (the last name expires first), then the clock moved to where every token is
 * due in the next scheduled run.
 */
async function cachedAndDue(
  clock: TestClock = new TestClock({ virtualSleep: true, frozenAt: Date.now() }),
) {
  shared.sim.setOptions({ allowedScopes: SCOPES });
  const instance = () =>
    makeInstance({
      sim: shared.sim,
      clock,
      client: shared.client,
      table: shared.table,
      policy: fixedPolicy(POLICY),
    });
  const seeder = instance();
  for (const scope of [...SCOPES].reverse()) {
    expect((await vend(seeder, urlEvent({ query: `scope=${scope}` }))).status).toBe(200);
    clock.advance(1);
  }
  clock.advance(7200 - 900 - 200);
  const store = new DynamoDbTokenStore(shared.client, shared.table);
  const scheduler = instance();
  return { clock, store, tokens: scheduler.tokens };
}

const config = (deadlineMs: number) => ({
  inUseWindowSeconds: 86_400,
  dueWithinSeconds: scheduledRefreshDueWithin(300),
  scopes: POLICY.scopes,
  deadlineMs,
});

describe('scheduled refresh at scale', () => {
  it('a run that cannot refresh every due scope before its deadline stops starting refreshes, tries the most urgent first, and reports the rest as deferred', async () => {
    // Prepare: each refresh takes 10 s (a slow provider), the run has 25 s, one lane
    const { clock, store, tokens } = await cachedAndDue();
    const slow: Pick<TokenService, 'refresh'> = {
      refresh: async (scope, options) => {
        const result = await tokens.refresh(scope, options);
        clock.advance(10);
        return result;
      },
    };
    const deadlineMs = clock.now() + 25_000;
    const before = shared.sim.stats.tokenRequests;

    // Act
    const report = await runScheduledRefresh(
      { tokens: slow, store, clock, logger: quietLogger() },
      { ...config(deadlineMs), concurrency: 1 },
    );

    // Assess: refreshes started at 0, 10 and 20 s, on the three tokens expiring first
    const mostUrgent = [...SCOPES].reverse().slice(0, 3);
    expect([...report.refreshed].sort()).toEqual([...mostUrgent].sort());
    expect([...report.deferred].sort()).toEqual(
      SCOPES.filter((scope) => !mostUrgent.includes(scope)),
    );
    expect(shared.sim.stats.tokenRequests - before).toBe(3);
    expect(report.failed).toEqual([]);
  });

  it('a provider answering 429 with a Retry-After longer than the run has left gets no further request from the run: the remaining scopes are deferred, not each sent and failed', async () => {
    // Prepare: every token request is refused with Retry-After: 30; the run has 20 s
    const { clock, store, tokens } = await cachedAndDue();
    shared.sim.injectTokenFault({ kind: 'status', status: 429, retryAfter: 30 }, Infinity);
    const before = shared.sim.stats.tokenRequests;

    // Act
    const report = await runScheduledRefresh(
      { tokens, store, clock, logger: quietLogger() },
      config(clock.now() + 20_000),
    );

    // Assess: only the requests already under way when the first 429 came back
    const sent = shared.sim.stats.tokenRequests - before;
    expect(sent).toBeLessThanOrEqual(4);
    expect(report.failed).toHaveLength(sent);
    expect(report.failed.every((f) => f.code === 'upstream_unavailable')).toBe(true);
    expect(report.deferred).toHaveLength(SCOPES.length - sent);
  });

  it('a provider answering 429 with a Retry-After the run can wait out is waited out by every lane before the next scope is tried', async () => {
    // Prepare: the first four token requests are refused with Retry-After: 6 (longer than
    // the provider client waits itself, 5 s). Real time: a virtual sleep of one
    // lane would move the clock under the others' mints in flight, past their deadlines
    const clock = new TestClock();
    const { store, tokens } = await cachedAndDue(clock);
    shared.sim.injectTokenFault({ kind: 'status', status: 429, retryAfter: 6 }, 4);
    const started = clock.now();
    const before = shared.sim.stats.tokenRequests;

    // Act
    const report = await runScheduledRefresh(
      { tokens, store, clock, logger: quietLogger() },
      config(clock.now() + 200_000),
    );

    // Assess: four failed, the run waited 6 s, then refreshed the rest
    expect(report.failed).toHaveLength(4);
    expect(report.refreshed).toHaveLength(SCOPES.length - 4);
    expect(report.deferred).toEqual([]);
    expect(shared.sim.stats.tokenRequests - before).toBe(SCOPES.length);
    expect(clock.now() - started).toBeGreaterThanOrEqual(6_000);
  });

  it('the handler keeps back the longest refresh from the invocation time left, or half of a short one', () => {
    expect(refreshStartDeadline(1_000, 240_000)).toBe(1_000 + 240_000 - LONGEST_REFRESH_MS);
    expect(refreshStartDeadline(0, 20_000)).toBe(10_000);
  });
});
