import { beforeEach, describe, expect, it } from 'vitest';
import { DynamoDbTokenStore } from '../../functions/adapters/dynamodb-token-store.js';
import { TestClock } from '../support/clock.js';
import { keepRenewingLease } from '../support/renewing-holder.js';
import { useSimulatorAndTable } from '../support/simulator-and-table.js';
import {
  demoCredentials,
  makeInstance,
  SHARED_SEALER,
  urlEvent,
  vend,
} from '../support/vend-harness.js';

// A token that is expired, short of the caller's min_ttl, or minted with an
// older secret version is never served, on any path: not while another
// instance holds the lease, and not while a failed refresh backs off.

const shared = useSimulatorAndTable();
let store: DynamoDbTokenStore;
beforeEach(() => {
  store = new DynamoDbTokenStore(shared.client, shared.table);
});

const PK = 'TOKEN#ba_demo_1';
const STALE = 'tok-stale';

/** Stores the stale token as an earlier writer would have. */
async function storeStale(
  clock: TestClock,
  kind: { secondsLeft: number; version: string },
): Promise<void> {
  const now = Math.floor(clock.now() / 1000);
  await store.tryAcquireLease(PK, 'writer', clock.now(), clock.now() + 1000);
  await store.putToken(
    PK,
    {
      tokenType: 'Bearer',
      scope: 'ba_demo_1',
      issuedAt: now + kind.secondsLeft - 7200,
      expiresAt: now + kind.secondsLeft,
      credentialsVersion: kind.version,
      sealed: await SHARED_SEALER.seal(STALE, PK),
    },
    'writer',
  );
}

const stale = [
  ['an expired token', { secondsLeft: -5, version: 'v1' }],
  ['a token short of min_ttl', { secondsLeft: 100, version: 'v1' }],
  ['a token of an older secret version', { secondsLeft: 7000, version: 'v0' }],
] as const;

describe.each(stale)('%s', (_label, kind) => {
  const ask = async (clock: TestClock) => {
    const instance = makeInstance({
      sim: shared.sim,
      clock,
      store,
      credentials: demoCredentials('v1'),
    });
    return vend(instance, urlEvent({ query: 'min_ttl=300&scope=ba_demo_1' }));
  };

  it('is not served while another instance holds the lease: the caller waits, then gets 503', async () => {
    // Prepare: a holder that keeps its lease beyond the wait bound
    const clock = new TestClock({ virtualSleep: true });
    await storeStale(clock, kind);
    await keepRenewingLease(store, PK, clock);

    // Act
    const result = await ask(clock);

    // Assess
    expect(result.status).toBe(503);
    expect(result.body.code).toBe('upstream_unavailable');
    expect(JSON.stringify(result.body)).not.toContain(STALE);
    expect(shared.sim.stats.tokenRequests).toBe(0);
  });

  it('is not served while a failed refresh backs off: the caller gets the failure', async () => {
    // Prepare: a refresh failed a moment ago
    const clock = new TestClock({ virtualSleep: true });
    await storeStale(clock, kind);
    await store.tryAcquireLease(PK, 'failed', clock.now(), clock.now() + 10_000);
    await store.releaseLease(PK, 'failed', { atMs: clock.now(), code: 'upstream_unavailable' });

    // Act
    const result = await ask(clock);

    // Assess
    expect(result.status).toBe(503);
    expect(result.body.code).toBe('upstream_unavailable');
    expect(JSON.stringify(result.body)).not.toContain(STALE);
    expect(shared.sim.stats.tokenRequests).toBe(0);
  });
});
