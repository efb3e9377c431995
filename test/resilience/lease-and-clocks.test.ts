/**
 * Fault matrix, the lease: a lease holder that dies mid-refresh, and instance
 * clocks skewed by up to 30 s either way (each instance its own clock), over
 * DynamoDB Local.
 */
import { beforeEach, expect, it } from 'vitest';
import { DynamoDbTokenStore } from '../../functions/adapters/dynamodb-token-store.js';
import { NO_REVISION, type TokenStore } from '../../functions/core/ports.js';
import { afterEverySleep, TestClock } from '../support/clock.js';
import { ask, expectSound, fleetInstance, SkewedClock } from '../support/fleet.js';
import { useSimulatorAndTable } from '../support/simulator-and-table.js';
import { SHARED_SEALER } from '../support/vend-harness.js';

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

it('instance clocks skewed by up to 30 s either way: no expired or short token by the true clock, no error, one mint per stampede and per refresh', async () => {
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

  // Assess: one mint for the stampede, one per refresh (4 hours of 7200 s
  // tokens refreshed 900 s ahead: 2), as with clocks that agree
  expect(stampedeMints).toBe(1);
  expect(shared.sim.stats.tokenRequests).toBe(3);
});

it('a dead holder whose clock runs 30 s ahead: a waiter takes over once it has watched the lease for a lease period by its own clock', async () => {
  // Prepare: the holder's lease ends 10 s after its own now, 40 s after the waiter's
  const truth = new TestClock({ virtualSleep: true, frozenAt: 1_800_000_000_500 });
  const holderNow = truth.now() + 30_000;
  await store.tryAcquireLease('TOKEN#ba_demo_1', 'died-ahead', holderNow, holderNow + 10_000);
  const waiter = fleetInstance({ sim: shared.sim, store, clock: truth });
  const startedMs = truth.now();

  // Act
  const answer = await ask(waiter, 'ba_demo_1');

  // Assess: a token, after one lease period of waiting (not 40 s, past the wait bound)
  expectSound(answer, { scope: 'ba_demo_1', nowMs: truth.now() });
  expect(answer.status).toBe(200);
  expect(truth.now() - startedMs).toBeGreaterThanOrEqual(10_000);
  expect(truth.now() - startedMs).toBeLessThan(13_000);
  expect(shared.sim.stats.tokenRequests).toBe(1);
});

it('a lease whose end looks long past is taken over like one that ran out moments ago: after a lease period of watching, since its end is on the holder’s clock', async () => {
  // Prepare: leftovers of two dead holders, 61 s and 20 s past their end
  const truth = new TestClock({ virtualSleep: true, frozenAt: 1_800_000_000_500 });
  const instance = fleetInstance({ sim: shared.sim, store, clock: truth });
  const leftover = async (scope: string, endedSecondsAgo: number) => {
    const until = truth.now() - endedSecondsAgo * 1000;
    await store.tryAcquireLease(`TOKEN#${scope}`, 'died', until - 10_000, until);
  };
  await leftover('ba_demo_1', 61);
  await leftover('ba_demo_2', 20);

  // Act
  const before = truth.now();
  const long = await ask(instance, 'ba_demo_1');
  const longWaitMs = truth.now() - before;
  const recent = await ask(instance, 'ba_demo_2');
  const recentWaitMs = truth.now() - before - longWaitMs;

  // Assess
  expect([long.status, recent.status]).toEqual([200, 200]);
  expect(longWaitMs).toBeGreaterThanOrEqual(10_000);
  expect(longWaitMs).toBeLessThan(13_000);
  expect(recentWaitMs).toBeGreaterThanOrEqual(10_000);
  expect(shared.sim.stats.tokenRequests).toBe(2);
});

/** `store`, but `beforeTakeover` runs just before each takeover of a watched lease. */
function racing(store: TokenStore, beforeTakeover: () => Promise<void>): TokenStore {
  return {
    get: (pk) => store.get(pk),
    leaseIfAbsent: (pk, owner, nowMs, untilMs) => store.leaseIfAbsent(pk, owner, nowMs, untilMs),
    tryAcquireLease: async (pk, owner, nowMs, untilMs, seenRevision, takeover) => {
      if (takeover?.holder) await beforeTakeover();
      return store.tryAcquireLease(pk, owner, nowMs, untilMs, seenRevision, takeover);
    },
    putToken: (pk, token, owner, options) => store.putToken(pk, token, owner, options),
    releaseLease: (pk, owner, failure) => store.releaseLease(pk, owner, failure),
    markUsed: (pk, at) => store.markUsed(pk, at),
    delete: (pk) => store.delete(pk),
    list: () => store.list(),
  };
}

it('a waiter that watched a dead lease does not take the lease another waiter took over just before it', async () => {
  // Prepare: a dead holder's lease; another waiter takes it over moments before this one
  const clock = new TestClock({ virtualSleep: true, frozenAt: 1_800_000_000_500 });
  const pk = 'TOKEN#ba_demo_1';
  await store.tryAcquireLease(pk, 'died', clock.now(), clock.now() + 10_000);
  const dead = await store.get(pk);
  const otherWaiter = async () => {
    const holder = { owner: 'died', untilMs: dead?.leaseUntil ?? 0 };
    await store.tryAcquireLease(pk, 'other', clock.now(), clock.now() + 10_000, NO_REVISION, {
      holder,
    });
  };
  const waiter = fleetInstance({ sim: shared.sim, store: racing(store, otherWaiter), clock });

  // Act
  const answer = await ask(waiter, 'ba_demo_1');

  // Assess: the other waiter's lease stands (it mints); this one gives up at its bound
  expectSound(answer, { scope: 'ba_demo_1', nowMs: clock.now() });
  expect(answer.body.code).toBe('upstream_unavailable');
  expect((await store.get(pk))?.leaseOwner).toBe('other');
  expect(shared.sim.stats.tokenRequests).toBe(0);
});

it('a waiter whose first read holds an old failure keeps waiting for the holder, and gets its token', async () => {
  // Prepare: a failure recorded a minute ago, then a live holder that stores a
  // token while the waiter polls
  const clock = new TestClock({ virtualSleep: true, frozenAt: 1_800_000_000_500 });
  const pk = 'TOKEN#ba_demo_1';
  await store.tryAcquireLease(pk, 'failed', clock.now(), clock.now() + 10_000);
  await store.releaseLease(pk, 'failed', {
    atMs: clock.now() - 60_000,
    code: 'upstream_unavailable',
  });
  await store.tryAcquireLease(pk, 'holder', clock.now(), clock.now() + 10_000);
  const now = Math.floor(clock.now() / 1000);
  afterEverySleep(clock, async (sleeps) => {
    if (sleeps !== 2) return;
    const sealed = await SHARED_SEALER.seal('tok-from-holder', pk);
    const token = {
      tokenType: 'Bearer' as const,
      scope: 'ba_demo_1',
      issuedAt: now,
      expiresAt: now + 7200,
    };
    await store.putToken(pk, { ...token, credentialsVersion: 'v1', sealed }, 'holder');
  });
  const waiter = fleetInstance({ sim: shared.sim, store, clock });

  // Act
  const answer = await ask(waiter, 'ba_demo_1');

  // Assess
  expectSound(answer, { scope: 'ba_demo_1', nowMs: clock.now() });
  expect(answer.body.access_token).toBe('tok-from-holder');
  expect(shared.sim.stats.tokenRequests).toBe(0);
});

it('a holder whose clock lags 30 s gives up on a failing provider: its waiters answer with the failure instead of minting again', async () => {
  // Prepare: the provider hangs on the holder's three attempts, then would answer
  const truth = new TestClock();
  const holder = fleetInstance({ sim: shared.sim, store, clock: new SkewedClock(truth, -30_000) });
  const waiter = fleetInstance({ sim: shared.sim, store, clock: new SkewedClock(truth, 30_000) });
  shared.sim.injectTokenFault({ kind: 'hang' }, 3);

  // Act: the waiter arrives while the holder's refresh is in flight
  const holding = ask(holder, 'ba_demo_1');
  while ((await store.get('TOKEN#ba_demo_1'))?.leaseOwner === undefined) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const waited = await ask(waiter, 'ba_demo_1');
  const held = await holding;

  // Assess: the failure recorded at the holder's (earlier) time still ends the wait
  for (const answer of [held, waited]) {
    expectSound(answer, { scope: 'ba_demo_1', nowMs: truth.now() });
    expect(answer.status).toBe(503);
  }
  expect(shared.sim.stats.tokenRequests).toBe(3);
});

it('after a failed refresh, the others back off 5 s from when they first see it, however far ahead the failing instance’s clock runs', async () => {
  // Prepare: refreshes fail on an instance 30 s ahead (ba_demo_1) and on one in step (ba_demo_2)
  const truth = new TestClock({ virtualSleep: true, frozenAt: 1_800_000_000_500 });
  const ahead = fleetInstance({ sim: shared.sim, store, clock: new SkewedClock(truth, 30_000) });
  const inStep = fleetInstance({ sim: shared.sim, store, clock: truth });
  const other = fleetInstance({ sim: shared.sim, store, clock: truth });
  shared.sim.injectTokenFault({ kind: 'status', status: 400 }, 2);
  const failed = [await ask(ahead, 'ba_demo_1'), await ask(inStep, 'ba_demo_2')];
  const failedAtMs = truth.now();

  // Act: the other instance asks 3 s later, then 2.5 s and 5.5 s after that
  const at = async (secondsAfterFailure: number) => {
    truth.advance(secondsAfterFailure - (truth.now() - failedAtMs) / 1000);
    return [await ask(other, 'ba_demo_1'), await ask(other, 'ba_demo_2')];
  };
  const first = await at(3);
  const second = await at(5.5);
  const third = await at(8.5);

  // Assess: in step, back-off ends 5 s after the failure; ahead, 5 s after the
  // other instance first saw it (not 35 s after)
  expect(failed.map((a) => a.body.code)).toEqual(['upstream_error', 'upstream_error']);
  expect(first.map((a) => a.status)).toEqual([502, 502]);
  expect(second.map((a) => a.status)).toEqual([502, 200]);
  expect(third.map((a) => a.status)).toEqual([200, 200]);
  for (const answer of [...first, ...second, ...third]) {
    expectSound(answer, { scope: answer.body.scope as string, nowMs: truth.now() });
  }
});
