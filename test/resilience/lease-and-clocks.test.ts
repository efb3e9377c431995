/**
 * Fault matrix, the lease: a lease holder that dies mid-refresh, and instance
 * clocks skewed by up to 30 s either way (each instance its own clock), over
 * DynamoDB Local.
 */
import { beforeEach, expect, it } from 'vitest';
import { DynamoDbTokenStore } from '../../functions/adapters/dynamodb-token-store.js';
import { TestClock } from '../support/clock.js';
import { ask, expectSound, fleetInstance, SkewedClock } from '../support/fleet.js';
import { useSimulatorAndTable } from '../support/simulator-and-table.js';

const shared = useSimulatorAndTable();
let store: DynamoDbTokenStore;
beforeEach(() => {
  store = new DynamoDbTokenStore(shared.client, shared.table);
});

it('a lease holder that dies mid-refresh: everyone keeps the current token, a caller that needs a newer one takes over once the lease runs out', async () => {
  // Prepare: a token in its refresh-ahead window; its refresh lease taken by an instance that then died
  const clock = new TestClock({ virtualSleep: true });
  const fleet = Array.from({ length: 3 }, () => fleetInstance({ sim: shared.sim, store, clock }));
  const current = await ask(fleet[0]!, 'ba_demo_1');
  clock.advance(7200 - 800);
  const item = await store.get('TOKEN#ba_demo_1');
  expect(
    await store.tryAcquireLease(
      'TOKEN#ba_demo_1',
      'died-mid-refresh',
      clock.now(),
      clock.now() + 10_000,
      item?.revision,
    ),
  ).toBe(true);

  // Act
  const meanwhile = [];
  for (const instance of fleet) meanwhile.push(await ask(instance, 'ba_demo_1'));
  const needsNewer = await ask(fleet[1]!, 'ba_demo_1', 900); // 800 s left will not do
  const after = [];
  for (const instance of fleet) after.push(await ask(instance, 'ba_demo_1'));

  // Assess
  for (const answer of meanwhile) {
    expectSound(answer, { scope: 'ba_demo_1', nowMs: clock.now() });
    expect(answer.body.access_token).toBe(current.body.access_token);
  }
  expectSound(needsNewer, { scope: 'ba_demo_1', nowMs: clock.now(), minTtl: 900 });
  expect(needsNewer.status).toBe(200);
  expect(needsNewer.body.expires_in as number).toBeGreaterThan(7000);
  for (const answer of after) {
    expectSound(answer, { scope: 'ba_demo_1', nowMs: clock.now() });
    expect(answer.body.access_token).toBe(needsNewer.body.access_token);
  }
  expect(shared.sim.stats.tokenRequests).toBe(2);
  expect((await store.get('TOKEN#ba_demo_1'))?.leaseOwner).toBeUndefined();
});

it('instance clocks skewed by up to 30 s either way: no expired or short token by the true clock, no error, and mints stay bounded', async () => {
  // Prepare: five instances at -30, -15, 0, +15 and +30 s; real sleeps, since
  // lease waiters really wait while a mint is in flight
  const truth = new TestClock();
  const skews = [-30_000, -15_000, 0, 15_000, 30_000];
  const fleet = skews.map((skew) =>
    fleetInstance({ sim: shared.sim, store, clock: new SkewedClock(truth, skew) }),
  );
  shared.sim.injectTokenFault({ kind: 'latency', ms: 20 }, Number.POSITIVE_INFINITY);

  // Act: a cold stampede, then four simulated hours of traffic in 5-minute steps
  const stampede = await Promise.all(
    Array.from({ length: 50 }, (_, i) => ask(fleet[i % fleet.length]!, 'ba_demo_1')),
  );
  const stampedeMints = shared.sim.stats.tokenRequests;
  // A token is good for min_ttl by the serving instance's clock: the slack is the skew.
  const sound = (answers: Awaited<ReturnType<typeof ask>>[]) => {
    for (const answer of answers) {
      expectSound(answer, { scope: 'ba_demo_1', nowMs: truth.now(), slackSeconds: 30 });
      expect(answer.status).toBe(200);
    }
  };
  sound(stampede);
  for (let step = 0; step < 48; step++) {
    truth.advance(300);
    sound(await Promise.all(fleet.map((instance) => ask(instance, 'ba_demo_1'))));
  }

  // Assess
  // Finding: a lease runs out by its taker's clock (10 s), so an instance whose
  // clock is more than 10 s ahead of the holder's takes the lease over at once.
  // With five clocks 15 s apart, one stampede (or one refresh) can cost up to
  // one mint per clock instead of one; never more, and never a bad answer.
  expect(stampedeMints).toBeLessThanOrEqual(fleet.length);
  // 4 hours of 7200 s tokens refreshed 900 s ahead: 2 refreshes, each at most one mint per clock.
  expect(shared.sim.stats.tokenRequests).toBeLessThanOrEqual(stampedeMints + 2 * fleet.length);
});
