/**
 * A provider that answers 429 (or 503) with a long Retry-After is left alone
 * that long by every instance, not only by the caller that got the answer:
 * the failure record carries the provider's hint, bounded at 60 s, and each
 * instance counts it from its own first sight of the record. Regression:
 * every instance backed off 5 s only, so the fleet asked a provider that had
 * asked for 30 s of quiet again every 5 s.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { DynamoDbTokenStore } from '../../functions/adapters/dynamodb-token-store.js';
import { tokenStatus } from '../../functions/admin/status.js';
import { TestClock } from '../support/clock.js';
import { ask, fleetInstance } from '../support/fleet.js';
import { useSimulatorAndTable } from '../support/simulator-and-table.js';

const shared = useSimulatorAndTable();
let store: DynamoDbTokenStore;
beforeEach(() => {
  store = new DynamoDbTokenStore(shared.client, shared.table);
});

function threeInstances(clock: TestClock) {
  return Array.from({ length: 3 }, () => fleetInstance({ sim: shared.sim, store, clock }));
}

describe("a provider's long Retry-After across instances", () => {
  it('regression: every instance waits out a 30 s Retry-After, then one asks again', async () => {
    // Prepare
    const clock = new TestClock({ virtualSleep: true });
    const [a, b, c] = threeInstances(clock);
    shared.sim.injectTokenFault({ kind: 'status', status: 429, retryAfter: 30 }, Infinity);

    // Act
    const first = await ask(a!, 'ba_demo_2');
    const item = await store.get('TOKEN#ba_demo_2');
    const recorded = item?.failure;
    const shown = item && tokenStatus(item, clock.now(), 3600).last_failure;
    clock.advance(1);
    const secondInstance = await ask(b!, 'ba_demo_2');
    clock.advance(20);
    const thirdInstance = await ask(c!, 'ba_demo_2');
    const asked = shared.sim.stats.tokenRequests;
    shared.sim.clearFaults();
    clock.advance(10); // 31 s after the failure
    const after = await ask(b!, 'ba_demo_2');

    // Assess
    expect(first).toMatchObject({ status: 503, body: { code: 'upstream_unavailable' } });
    expect(first.headers['retry-after']).toBe('30');
    expect(recorded).toMatchObject({ code: 'upstream_unavailable', retryAfterSeconds: 30 });
    // As an operator sees it in the admin status.
    expect(shown).toMatchObject({ code: 'upstream_unavailable', retry_after: 30 });
    for (const answer of [secondInstance, thirdInstance]) {
      expect(answer).toMatchObject({ status: 503, body: { code: 'upstream_unavailable' } });
    }
    // What is left of the 30 s, on these instances' shared clock.
    expect(Number(secondInstance.headers['retry-after'])).toBe(29);
    expect(Number(thirdInstance.headers['retry-after'])).toBe(9);
    expect(asked).toBe(1);
    expect(after.status).toBe(200);
    expect(shared.sim.stats.tokenRequests).toBe(2);
  });

  it('bounds the back-off at 60 s whatever the provider asks', async () => {
    // Prepare
    const clock = new TestClock({ virtualSleep: true });
    const [a, b] = threeInstances(clock);
    shared.sim.injectTokenFault({ kind: 'status', status: 503, retryAfter: 3600 }, Infinity);

    // Act
    const first = await ask(a!, 'ba_demo_2');
    const held = await ask(b!, 'ba_demo_2');
    clock.advance(59);
    const stillHeld = await ask(b!, 'ba_demo_2');
    const asked = shared.sim.stats.tokenRequests;
    shared.sim.clearFaults();
    clock.advance(2);
    const after = await ask(b!, 'ba_demo_2');

    // Assess
    expect(first.headers['retry-after']).toBe('60');
    expect(held.headers['retry-after']).toBe('60');
    expect(stillHeld.status).toBe(503);
    expect(asked).toBe(1);
    expect(after.status).toBe(200);
  });

  it('a short Retry-After still backs off the usual 5 s', async () => {
    // Prepare
    const clock = new TestClock({ virtualSleep: true });
    const [a, b] = threeInstances(clock);
    shared.sim.injectTokenFault({ kind: 'status', status: 429, retryAfter: 1 }, Infinity);

    // Act
    const first = await ask(a!, 'ba_demo_2');
    const asked = shared.sim.stats.tokenRequests;
    const held = await ask(b!, 'ba_demo_2');
    const askedAfterHeld = shared.sim.stats.tokenRequests;
    shared.sim.clearFaults();
    clock.advance(6);
    const after = await ask(b!, 'ba_demo_2');

    // Assess
    expect(first).toMatchObject({ status: 503 });
    expect(first.headers['retry-after']).toBe('5');
    expect(held.headers['retry-after']).toBe('5');
    expect(askedAfterHeld).toBe(asked);
    expect(after.status).toBe(200);
  });
});
