import { beforeEach, describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../../functions/core/errors.js';
import { NO_REVISION, type StoredItem, type TokenStore } from '../../functions/core/ports.js';
import { keepRenewingLease } from '../support/renewing-holder.js';
import { setup, storeToken } from '../support/token-service-fixture.js';

/**
 * Callers on other instances wait while one instance mints (the lease). These
 * tests run on a virtual clock: `landsAt` stores the holder's token once the
 * clock reaches it, and each waiter read is counted.
 */
describe('lease waiters', () => {
  let t: ReturnType<typeof setup>;
  let t0: number;
  let reads: number;

  beforeEach(() => {
    t = setup();
    t0 = t.clock.now();
    reads = 0;
  });

  const throttle = () =>
    new StoreUnavailableError('DynamoDB failed (ProvisionedThroughputExceededException)', {
      throttled: true,
    });

  /** b holds the lease on ba_1 from t0; its token lands `afterMs` later. */
  async function holderStoresAfter(afterMs: number, item: Partial<StoredItem> = {}) {
    if (item.token)
      t.store.items.set('TOKEN#ba_1', { pk: 'TOKEN#ba_1', revision: NO_REVISION, ...item });
    await t.store.tryAcquireLease('TOKEN#ba_1', 'b', t0, t0 + 10_000);
    const get = t.store.get.bind(t.store);
    let landed = false;
    t.store.get = async (pk) => {
      reads++;
      if (!landed && t.clock.now() >= t0 + afterMs) {
        landed = true;
        const token = { accessToken: 'tok-from-b', version: 'v1', secondsLeft: 7200 };
        await storeToken(t, 'ba_1', token, 'b');
      }
      return get(pk);
    };
  }

  it('find the new token within one short poll of its store, with a handful of reads', async () => {
    await holderStoresAfter(100);

    const result = await t.a.getToken('ba_1', 300);

    expect(result.token.accessToken).toBe('tok-from-b');
    expect(result.outcome).toMatchObject({ tier: 'l2', waited: true });
    expect(t.clock.now() - t0).toBeGreaterThanOrEqual(100);
    expect(t.clock.now() - t0).toBeLessThanOrEqual(100 + 34); // one short poll: a third of a mint
    expect(reads).toBeLessThanOrEqual(1 + 4); // the first read, then the polls
    expect(t.provider.state.mints).toBe(0);
  });

  it('shape their polls by the mint duration stored with the last token', async () => {
    // The item holds an expired token whose mint took 2 s, and b's lease
    const expired = Math.floor(t0 / 1000) - 10;
    await holderStoresAfter(2000, {
      token: {
        tokenType: 'Bearer',
        scope: 'ba_1',
        issuedAt: expired - 7200,
        expiresAt: expired,
        credentialsVersion: 'v1',
        sealed: await t.sealer.seal('old', 'TOKEN#ba_1'),
        mintMs: 2000,
      },
    });

    const result = await t.a.getToken('ba_1', 300);

    expect(result.token.accessToken).toBe('tok-from-b');
    expect(t.clock.now() - t0).toBeLessThanOrEqual(2000 + 667); // a third of a 2 s mint
    expect(reads).toBeLessThanOrEqual(1 + 3); // polls at 1.2, 1.87 and 2.53 s
  });

  it("shape their polls by this instance's own last mint when the table knows none", async () => {
    // a minted ba_2 with a provider that took 2 s
    const mint = t.provider.mint;
    const slow = t.instance('a-slow', t.credentials, async (...args) => {
      await t.clock.sleep(2000);
      return mint(...args);
    });
    await slow.getToken('ba_2', 300);
    t0 = t.clock.now();
    await holderStoresAfter(2000);

    await slow.getToken('ba_1', 300);

    expect(t.clock.now() - t0).toBeLessThanOrEqual(2000 + 667); // a third of a 2 s mint
    expect(reads).toBeLessThanOrEqual(1 + 3);
  });

  it('make a bounded number of reads when the holder died, then one of them takes over: one mint', async () => {
    await holderStoresAfter(Number.POSITIVE_INFINITY);

    const result = await t.a.getToken('ba_1', 300);

    expect(result.token.accessToken).toBe('tok-1');
    expect(result.outcome).toMatchObject({ tier: 'provider', waited: true });
    expect(t.provider.state.mints).toBe(1);
    expect(reads).toBeLessThanOrEqual(1 + 29);
  });

  it('take a throttled poll (many waiters on one item) as "not yet", never as an outage that makes each of them mint', async () => {
    await holderStoresAfter(300);
    const get = t.store.get.bind(t.store);
    let throttled = 0;
    t.store.get = async (pk) => {
      if (reads >= 1 && throttled < 3) {
        throttled++;
        reads++;
        throw new StoreUnavailableError(
          'DynamoDB GetItem failed (ProvisionedThroughputExceededException)',
          { throttled: true },
        );
      }
      return get(pk);
    };

    const result = await t.a.getToken('ba_1', 300);

    expect(throttled).toBe(3);
    expect(result.token.accessToken).toBe('tok-from-b');
    expect(result.outcome.degraded).toBe(false);
    expect(t.provider.state.mints).toBe(0);
  });

  it('regression: a first look throttled for most of the bound leaves only the rest of it to wait, so a vend ends within one bound, not two', async () => {
    // A live holder that keeps its lease (renewing, never storing), and reads
    // of the hot item refused for their rate for 12 s of the 13 s bound. The
    // patient first look and the wait each used to get a whole bound: 24 s of
    // waiting, then a mint, past the function's 30 s timeout.
    const holderSees = {
      get: t.store.get.bind(t.store),
      tryAcquireLease: t.store.tryAcquireLease.bind(t.store),
    } as unknown as TokenStore;
    await keepRenewingLease(holderSees, 'TOKEN#ba_1', t.clock);
    const look = t.store.leaseIfAbsent.bind(t.store);
    const get = t.store.get.bind(t.store);
    t.store.leaseIfAbsent = async (...args) => {
      if (t.clock.now() < t0 + 11_000) throw throttle();
      return look(...args);
    };
    t.store.get = async (pk) => {
      if (t.clock.now() < t0 + 11_000) throw throttle();
      return get(pk);
    };

    await expect(t.a.getToken('ba_1', 300)).rejects.toMatchObject({ code: 'upstream_unavailable' });

    expect(t.clock.now() - t0).toBeLessThanOrEqual(13_000 + 800);
    expect(t.provider.state.mints).toBe(0);
  });

  it('regression: a stampede waiter whose lease write and then every poll were throttled is not served degraded: it cannot tell nobody holds the lease', async () => {
    // An expired token and no lease; the waiter's lease write loses to b's in
    // the same instant, refused for its rate, and every read after that is
    // throttled too (thousands of waiters on one item). It took the first
    // throttled write as "the table takes no writes" and minted degraded at
    // the end of its wait, as every waiter of the stampede would, though it
    // never saw the item again: b holds the lease and is minting.
    await storeToken(t, 'ba_1', { accessToken: 'expired', version: 'v1', secondsLeft: -10 });
    const acquire = t.store.tryAcquireLease.bind(t.store);
    t.store.tryAcquireLease = async (pk, _owner, nowMs, untilMs, ...rest) => {
      await acquire(pk, 'b', nowMs, untilMs, ...rest);
      throw throttle();
    };
    let warm = false;
    const look = t.store.leaseIfAbsent.bind(t.store);
    t.store.leaseIfAbsent = async (...args) => {
      warm = true; // the first look reads the item; every later read is throttled
      return look(...args);
    };
    const get = t.store.get.bind(t.store);
    t.store.get = async (pk) => {
      reads++;
      if (warm) throw throttle();
      return get(pk);
    };

    await expect(t.a.getToken('ba_1', 300)).rejects.toMatchObject({ code: 'upstream_unavailable' });

    expect(t.provider.state.mints).toBe(0);
  });

  it('arriving while the item is throttled, keep reading and wait: no instance degrades and mints', async () => {
    await holderStoresAfter(300);
    const look = t.store.leaseIfAbsent.bind(t.store);
    const get = t.store.get.bind(t.store);
    let refusedLooks = 0;
    let refusedReads = 0;
    t.store.leaseIfAbsent = async (...args) => {
      refusedLooks++;
      if (refusedLooks === 1) throw throttle();
      return look(...args);
    };
    t.store.get = async (pk) => {
      if (refusedReads < 2) {
        refusedReads++;
        throw throttle();
      }
      return get(pk);
    };

    const result = await t.a.getToken('ba_1', 300);

    // One throttled first look (a write): then reads, the first retried, then polls
    expect([refusedLooks, refusedReads]).toEqual([1, 2]);
    expect(result.token.accessToken).toBe('tok-from-b');
    expect(result.outcome.degraded).toBe(false);
    expect(t.provider.state.mints).toBe(0);
  });

  it('take a throttled lease attempt as not taken: the caller waits, and mints once when the lease is free', async () => {
    // An expired token and no lease: the caller must take the lease to mint
    const expired = Math.floor(t0 / 1000) - 10;
    await storeToken(t, 'ba_1', { accessToken: 'old', version: 'v1', secondsLeft: -10 });
    expect(t.store.items.get('TOKEN#ba_1')?.token?.expiresAt).toBe(expired);
    const acquire = t.store.tryAcquireLease.bind(t.store);
    let refused = 0;
    t.store.tryAcquireLease = async (...args) => {
      if (refused < 1) {
        refused++;
        throw throttle();
      }
      return acquire(...args);
    };

    const result = await t.a.getToken('ba_1', 300);

    expect(refused).toBe(1);
    expect(result.outcome.degraded).toBe(false);
    expect(t.provider.state.mints).toBe(1);
  });

  it('still serve degraded when a poll finds DynamoDB failing, as any read does', async () => {
    await holderStoresAfter(300);
    const get = t.store.get.bind(t.store);
    t.store.get = async (pk) => {
      if (reads >= 1) throw new StoreUnavailableError('DynamoDB GetItem failed (TimeoutError)');
      return get(pk);
    };

    const result = await t.a.getToken('ba_1', 300);

    expect(result.outcome.degraded).toBe(true);
    expect(t.provider.state.mints).toBe(1);
  });

  /** Replaces the store's reads: records when each was sent (virtual ms since t0). */
  function recordReads(answer: (sentAt: number) => Promise<StoredItem | undefined>) {
    const sent: number[] = [];
    t.store.get = async () => {
      sent.push(t.clock.now() - t0);
      return answer(sent.length);
    };
    return sent;
  }
  const gaps = (times: number[]) => times.slice(1).map((at, i) => at - (times[i] ?? 0));

  it('give up at their bound, 13 s after they began waiting, not a poll later', async () => {
    // The holder stays alive (its lease renewed each second), so nobody takes over.
    await t.store.tryAcquireLease('TOKEN#ba_1', 'b', t0, t0 + 10_000);
    const get = t.store.get.bind(t.store);
    let renewedAt = t0;
    recordReads(async () => {
      if (t.clock.now() - renewedAt >= 1000) {
        renewedAt = t.clock.now();
        const item = t.store.items.get('TOKEN#ba_1');
        if (item) t.store.items.set('TOKEN#ba_1', { ...item, leaseUntil: renewedAt + 10_000 });
      }
      return get('TOKEN#ba_1');
    });

    const error = await t.a.getToken('ba_1', 300).catch((e: unknown) => e);

    expect(error).toMatchObject({ code: 'upstream_unavailable' });
    expect(t.clock.now() - t0).toBe(13_000);
    expect(t.provider.state.mints).toBe(0);
  });

  it('poll less often when the table answers slowly: at least twice as long as the last read took', async () => {
    await t.store.tryAcquireLease('TOKEN#ba_1', 'b', t0, t0 + 10_000);
    const get = t.store.get.bind(t.store);
    const sent = recordReads(async () => {
      await t.clock.sleep(200); // each read takes 200 ms
      return get('TOKEN#ba_1');
    });

    await t.a.getToken('ba_1', 300).catch(() => undefined);

    // From the second poll on (the first follows the first look, whose time is not a poll's):
    const waits = gaps(sent)
      .slice(1)
      .map((gap) => gap - 200);
    for (const wait of waits) expect(wait).toBeGreaterThanOrEqual(2 * 200 * 0.75);
  });

  it('after a throttled poll, poll at least twice as far apart, and further each time', async () => {
    await t.store.tryAcquireLease('TOKEN#ba_1', 'b', t0, t0 + 10_000);
    const get = t.store.get.bind(t.store);
    const sent = recordReads(async (n) => {
      if (n >= 2 && n <= 6) throw throttle();
      return get('TOKEN#ba_1');
    });

    await t.a.getToken('ba_1', 300).catch(() => undefined);

    // Polls 2 to 6 are throttled: the waits after them double (a third of a
    // mint is 33 ms) up to the longest delay, 800 ms.
    const after = gaps(sent).slice(2, 6);
    expect(after[0]).toBeGreaterThanOrEqual(2 * 33 * 0.75);
    for (let i = 1; i < after.length; i++) {
      expect(after[i]).toBeGreaterThanOrEqual(Math.min(800, (after[i - 1] ?? 0) * 2) * 0.75);
    }
  });

  it('a first look throttled for its whole bound reads a bounded number of times, further apart each time, then serves degraded', async () => {
    t.store.leaseIfAbsent = async () => {
      throw throttle();
    };
    const sent = recordReads(async () => {
      throw throttle();
    });

    const result = await t.a.getToken('ba_1', 300);

    expect(result.outcome.degraded).toBe(true);
    expect(t.clock.now() - t0).toBeLessThanOrEqual(13_000);
    expect(sent.length).toBeLessThanOrEqual(25);
    const waits = gaps(sent);
    for (let i = 1; i < waits.length; i++) {
      expect(waits[i]).toBeGreaterThanOrEqual(Math.min(800, (waits[i - 1] ?? 0) * 2) * 0.75);
    }
  });

  it('a read showing a lease that ran out moments ago (within clock disagreement) makes no lease attempt before watching it', async () => {
    await storeToken(t, 'ba_1', { accessToken: 'old', version: 'v1', secondsLeft: -10 });
    await t.store.tryAcquireLease('TOKEN#ba_1', 'b', t0 - 40_000, t0 - 30_000);
    t.a.forget();
    const acquire = t.store.tryAcquireLease.bind(t.store);
    const attempts: Array<string> = [];
    t.store.tryAcquireLease = async (...args) => {
      attempts.push(args[5]?.holder ? 'takeover' : 'plain');
      return acquire(...args);
    };

    const result = await t.a.getToken('ba_1', 300);

    expect(attempts).toEqual(['takeover']);
    expect(t.provider.state.mints).toBe(1);
    expect(result.token.accessToken).toBe('tok-1');
  });
});
