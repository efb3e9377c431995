/**
 * Fault matrix, provider side: 5xx, 429, timeouts, slow answers, malformed
 * bodies and connection resets, against several instances over DynamoDB Local.
 * Callers holding a servable token keep it; callers without one get a
 * documented problem (never a 500); nothing the provider answered wrongly is
 * cached; once the fault ends the next vend recovers by itself.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { DynamoDbTokenStore } from '../../functions/adapters/dynamodb-token-store.js';
import type { TokenFault } from '../../local/provider-simulator.js';
import { TestClock } from '../support/clock.js';
import { ask, expectSound, fleetInstance, PROVIDER_TIMEOUT_MS } from '../support/fleet.js';
import { useSimulatorAndTable } from '../support/simulator-and-table.js';

const shared = useSimulatorAndTable();
let store: DynamoDbTokenStore;
beforeEach(() => {
  store = new DynamoDbTokenStore(shared.client, shared.table);
});

const cases: Array<{ name: string; fault: TokenFault; code: string }> = [
  { name: 'HTTP 500', fault: { kind: 'status', status: 500 }, code: 'upstream_unavailable' },
  {
    name: 'HTTP 503 with Retry-After',
    fault: { kind: 'status', status: 503, retryAfter: 1 },
    code: 'upstream_unavailable',
  },
  {
    name: 'HTTP 429 with Retry-After',
    fault: { kind: 'status', status: 429, retryAfter: 2 },
    code: 'upstream_unavailable',
  },
  { name: 'a hang (timeout)', fault: { kind: 'hang' }, code: 'upstream_unavailable' },
  {
    name: 'an answer slower than the timeout',
    fault: { kind: 'latency', ms: PROVIDER_TIMEOUT_MS * 3 },
    code: 'upstream_unavailable',
  },
  { name: 'a connection reset', fault: { kind: 'reset' }, code: 'upstream_unavailable' },
  { name: 'a malformed body', fault: { kind: 'malformed' }, code: 'upstream_error' },
  { name: 'a wrong scope echo', fault: { kind: 'wrongScope' }, code: 'upstream_error' },
  { name: 'a wrong token_type', fault: { kind: 'wrongTokenType' }, code: 'upstream_error' },
  { name: 'no expires_in', fault: { kind: 'missingExpiresIn' }, code: 'upstream_error' },
];

describe('provider faults across three instances', () => {
  it.each(cases)(
    '$name: cached tokens keep serving, cold scopes get $code, recovery is automatic',
    async ({ fault, code }) => {
      // Prepare: ba_demo_1 cached; time moves into its refresh-ahead window (800 s left)
      const clock = new TestClock({ virtualSleep: true });
      const fleet = Array.from({ length: 3 }, () =>
        fleetInstance({ sim: shared.sim, store, clock }),
      );
      const first = await ask(fleet[0]!, 'ba_demo_1');
      expect(first.status).toBe(200);
      clock.advance(7200 - 800);
      shared.sim.injectTokenFault(fault, Number.POSITIVE_INFINITY);

      // Act: every instance keeps vending while the provider fails
      const during = [];
      for (let round = 0; round < 3; round++) {
        for (const instance of fleet) during.push(await ask(instance, 'ba_demo_1'));
        clock.advance(2);
      }
      const cold = await ask(fleet[1]!, 'ba_demo_2');
      const coldAgain = await ask(fleet[2]!, 'ba_demo_2');
      const storedWhileFailing = await store.get('TOKEN#ba_demo_2');
      shared.sim.clearFaults();
      clock.advance(6); // past the 5 s back-off after a failed refresh
      const after = [];
      for (const instance of fleet) after.push(await ask(instance, 'ba_demo_1'));
      const coldAfter = await ask(fleet[0]!, 'ba_demo_2');

      // Assess
      for (const answer of during) {
        expectSound(answer, { scope: 'ba_demo_1', nowMs: clock.now() });
        expect(answer.status).toBe(200);
        expect(answer.body.access_token).toBe(first.body.access_token);
      }
      for (const answer of [cold, coldAgain]) {
        expectSound(answer, { scope: 'ba_demo_2', nowMs: clock.now() });
        expect(answer.status).toBeGreaterThanOrEqual(500);
        expect(answer.body.code).toBe(code);
      }
      expect(storedWhileFailing?.token).toBeUndefined();
      for (const answer of [...after, coldAfter]) {
        expectSound(answer, {
          scope: answer === coldAfter ? 'ba_demo_2' : 'ba_demo_1',
          nowMs: clock.now(),
        });
        expect(answer.status).toBe(200);
        expect(answer.body.expires_in as number).toBeGreaterThan(7000);
      }
      expect(new Set(after.map((a) => a.body.access_token)).size).toBe(1);
    },
  );

  it('a slow answer within the timeout is simply slower: one mint, every caller served', async () => {
    // Real sleeps: waiters poll while the mint really takes 20 ms.
    const clock = new TestClock();
    const fleet = Array.from({ length: 3 }, () => fleetInstance({ sim: shared.sim, store, clock }));
    shared.sim.injectTokenFault(
      { kind: 'latency', ms: PROVIDER_TIMEOUT_MS / 5 },
      Number.POSITIVE_INFINITY,
    );

    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => ask(fleet[i % 3]!, 'ba_demo_1')),
    );

    for (const answer of answers) {
      expectSound(answer, { scope: 'ba_demo_1', nowMs: clock.now() });
      expect(answer.status).toBe(200);
    }
    expect(shared.sim.stats.tokenRequests).toBe(1);
  });
});
