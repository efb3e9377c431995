import { describe, expect, it } from 'vitest';
import {
  CredentialsUnavailableError,
  credentialsUnavailable,
  UpstreamUnavailableError,
} from '../../functions/core/errors.js';
import type { TokenStore } from '../../functions/core/ports.js';
import { setup, storeToken } from '../support/token-service-fixture.js';

/** Counts the store calls of each kind an instance makes. */
function countCalls(store: TokenStore) {
  const calls = { leaseIfAbsent: 0, get: 0, tryAcquireLease: 0 };
  for (const name of Object.keys(calls) as Array<keyof typeof calls>) {
    const real = (store[name] as (...args: unknown[]) => Promise<unknown>).bind(store);
    Object.assign(store, {
      [name]: (...args: unknown[]) => {
        calls[name]++;
        return real(...args);
      },
    });
  }
  return calls;
}

/**
 * A lookup's first call to the table (first-look.ts): one call
 * that takes the lease when there is no item, on items an instance has not
 * seen; a plain read otherwise.
 */
describe("a lookup's first look at the table", () => {
  it('on a missing item, takes the lease and mints after one call: no read, no separate lease attempt', async () => {
    const t = setup();
    const calls = countCalls(t.store);

    const result = await t.a.getToken('ba_1', 300);

    expect(result.outcome).toMatchObject({ tier: 'provider' });
    expect(calls).toEqual({ leaseIfAbsent: 1, get: 0, tryAcquireLease: 0 });
    expect(t.provider.state.mints).toBe(1);
  });

  it('learns of a held lease from that call and waits without a lease attempt of its own', async () => {
    const t = setup();
    await t.store.tryAcquireLease('TOKEN#ba_1', 'b', t.clock.now(), t.clock.now() + 10_000);
    const calls = countCalls(t.store);
    const landed = t.clock.now() + 150;
    const get = t.store.get.bind(t.store);
    t.store.get = async (pk) => {
      if (t.clock.now() >= landed && t.store.items.get(pk)?.leaseOwner === 'b') {
        await storeToken(
          t,
          'ba_1',
          { accessToken: 'tok-b', version: 'v1', secondsLeft: 7200 },
          'b',
        );
      }
      return get(pk);
    };

    const result = await t.a.getToken('ba_1', 300);

    expect(result.token.accessToken).toBe('tok-b');
    expect(calls.leaseIfAbsent).toBe(1);
    expect(calls.tryAcquireLease).toBe(0);
    expect(t.provider.state.mints).toBe(0);
  });

  it('reads an item this instance has seen with a plain read (no write) once its memory entry runs out', async () => {
    const t = setup({ config: { l1MaxAgeSeconds: 60 } });
    await t.a.getToken('ba_1', 300);
    const calls = countCalls(t.store);
    t.clock.advance(61);

    const result = await t.a.getToken('ba_1', 300);

    expect(result.outcome).toMatchObject({ tier: 'l2' });
    expect(calls).toEqual({ leaseIfAbsent: 0, get: 1, tryAcquireLease: 0 });
  });

  it('after an invalidation deleted an item it had seen, reads, then takes the lease: two calls, one mint', async () => {
    const t = setup();
    await t.a.getToken('ba_1', 300);
    await t.store.delete('TOKEN#ba_1');
    t.a.forget('ba_1');
    const calls = countCalls(t.store);

    await t.a.getToken('ba_1', 300);

    expect(calls).toEqual({ leaseIfAbsent: 0, get: 1, tryAcquireLease: 1 });
    expect(t.provider.state.mints).toBe(2);
  });

  it('without credentials to mint with, takes no lease: a plain read, and the caller is told the secret is unreadable', async () => {
    const t = setup();
    const cold = t.instance('cold', {
      get: () => Promise.reject(new CredentialsUnavailableError('The secret could not be read.')),
    });
    const calls = countCalls(t.store);

    const error = await cold.getToken('ba_1', 300).catch((e: unknown) => e);

    expect(error).toMatchObject({ message: credentialsUnavailable().message });
    expect(calls).toEqual({ leaseIfAbsent: 0, get: 1, tryAcquireLease: 0 });
    expect(t.store.items.has('TOKEN#ba_1')).toBe(false);
  });

  it('a read showing a live lease makes no lease attempt: the caller waits, and takes the lease over only once it has watched it a whole period', async () => {
    const t = setup();
    await t.a.getToken('ba_1', 300);
    t.clock.advance(7200); // the token expired
    const pk = 'TOKEN#ba_1';
    const item = t.store.items.get(pk);
    t.store.items.set(pk, { ...item!, leaseOwner: 'b', leaseUntil: t.clock.now() + 5_000 });
    const calls = countCalls(t.store);

    const result = await t.a.getToken('ba_1', 300); // b never stores

    expect(calls.tryAcquireLease).toBe(1); // the takeover only
    expect(result.outcome).toMatchObject({ tier: 'provider', waited: true });
    expect(t.provider.state.mints).toBe(2);
  });

  it("a read showing a lease whose end looks long past (by this clock) still waits a lease period before taking it over: its end is on the holder's clock", async () => {
    const t = setup();
    await t.a.getToken('ba_1', 300);
    t.clock.advance(7200);
    const pk = 'TOKEN#ba_1';
    const item = t.store.items.get(pk);
    t.store.items.set(pk, { ...item!, leaseOwner: 'b', leaseUntil: t.clock.now() - 61_000 });
    const calls = countCalls(t.store);
    const started = t.clock.now();

    const result = await t.a.getToken('ba_1', 300);

    expect(calls.tryAcquireLease).toBe(1); // the takeover only
    expect(t.clock.now() - started).toBeGreaterThanOrEqual(10_000);
    expect(result.outcome).toMatchObject({ tier: 'provider', waited: true });
    expect(t.provider.state.mints).toBe(2);
  });

  it('a mint that fails under a first-look lease frees the lease and records the failure: the next instance backs off at once', async () => {
    const t = setup();
    t.provider.state.fail = new UpstreamUnavailableError('down');
    const first = await t.a.getToken('ba_1', 300).catch((e: unknown) => e);
    const item = t.store.items.get('TOKEN#ba_1');
    const started = t.clock.now();

    const second = await t.b.getToken('ba_1', 300).catch((e: unknown) => e);

    expect(first).toBeInstanceOf(UpstreamUnavailableError);
    expect(item?.leaseOwner).toBeUndefined();
    expect(item?.failure).toMatchObject({ code: 'upstream_unavailable' });
    expect(second).toBeInstanceOf(UpstreamUnavailableError);
    expect(t.clock.now()).toBe(started); // no wait
    expect(t.provider.state.mints).toBe(1);
  });
});
