import { describe, expect, it } from 'vitest';
import { fingerprint } from '../../functions/core/fingerprint.js';
import { REVOCATION_MIN_AGE_SECONDS } from '../../functions/core/token-service.js';
import { isInUse } from '../../functions/refresh/in-use.js';
import { SkewedClock } from '../support/fleet.js';
import { setup, storeToken } from '../support/token-service-fixture.js';

/** min_ttl values spread over the whole allowed range, as many callers would ask. */
const spread = (count: number): number[] =>
  Array.from({ length: count }, (_, i) => Math.floor((i * 3600) / (count - 1)));

describe('one flight per scope, whatever min_ttl callers ask', () => {
  it('200 cold callers of one scope with 200 different min_ttl values share one lookup: 1 mint, 2 store calls', async () => {
    // Prepare
    const t = setup();

    // Act
    const results = await Promise.all(spread(200).map((minTtl) => t.a.getToken('ba_1', minTtl)));

    // Assess
    expect(t.provider.state.mints).toBe(1);
    expect(t.store.calls).toBe(2); // the first look that takes the lease, and the put that also marks the scope in use
    expect(new Set(results.map((r) => r.token.accessToken))).toEqual(new Set(['tok-1']));
  });

  it('with the store down (degraded), 100 concurrent callers with different min_ttl make one upstream mint', async () => {
    // Prepare
    const t = setup();
    t.store.down = true;

    // Act
    const results = await Promise.all(spread(100).map((minTtl) => t.a.getToken('ba_1', minTtl)));

    // Assess
    expect(t.provider.state.mints).toBe(1);
    expect(results.every((r) => r.outcome.degraded)).toBe(true);
  });

  it('a joiner whose min_ttl the landed token cannot meet checks again and gets one that does', async () => {
    // Prepare: the table holds a token with 1000 s left (fresh for min_ttl 300, short of 2000)
    const t = setup();
    await storeToken(t, 'ba_1', { accessToken: 'tok-old', version: 'v1', secondsLeft: 1000 });

    // Act: the first caller starts the lookup, the second joins it
    const [short, long] = await Promise.all([
      t.a.getToken('ba_1', 300),
      t.a.getToken('ba_1', 2000),
    ]);

    // Assess
    expect(short.token.accessToken).toBe('tok-old');
    expect(long.token.accessToken).toBe('tok-1');
    expect(long.token.expiresAt - Math.floor(t.clock.now() / 1000)).toBeGreaterThan(2000);
    expect(t.provider.state.mints).toBe(1);
  });

  it('in the refresh-ahead window only the caller that won the lease waits for the provider; those that joined it get the current token', async () => {
    // Prepare: a token with 800 s left (inside the 900 s window); the provider is held
    const t = setup();
    await storeToken(t, 'ba_1', { accessToken: 'tok-current', version: 'v1', secondsLeft: 800 });
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const gated = t.instance('gated', t.credentials, async (credentials, scope, deadline) => {
      await held;
      return t.provider.mint(credentials, scope, deadline);
    });

    // Act
    const settled: string[] = [];
    const calls = Array.from({ length: 5 }, () =>
      gated.getToken('ba_1', 300).then((r) => {
        settled.push(r.token.accessToken);
        return r;
      }),
    );
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    const beforeRelease = [...settled];
    release();
    const results = await Promise.all(calls);

    // Assess
    expect(beforeRelease).toEqual(['tok-current', 'tok-current', 'tok-current', 'tok-current']);
    expect(results.map((r) => r.token.accessToken)).toEqual([
      'tok-1',
      'tok-current',
      'tok-current',
      'tok-current',
      'tok-current',
    ]);
    expect(t.provider.state.mints).toBe(1);
  });

  it('scopes do not share a flight', async () => {
    const t = setup();

    const [one, two] = await Promise.all([t.a.getToken('ba_1', 300), t.a.getToken('ba_2', 300)]);

    expect(one.token.scope).toBe('ba_1');
    expect(two.token.scope).toBe('ba_2');
    expect(t.provider.state.mints).toBe(2);
  });
});

describe('in-use tracking', () => {
  it('marks a scope in use once per token, not once per vend or per interval', async () => {
    // Prepare
    const t = setup();
    await t.a.getToken('ba_1', 300);
    const firstMark = t.store.items.get('TOKEN#ba_1')?.lastUsedAt;
    const calls = t.store.calls;

    // Act: 100 vends at once, then one every 10 minutes for an hour (L1 gone each time)
    for (let i = 0; i < 100; i++) await t.a.getToken('ba_1', 300);
    const callsAtOnce = t.store.calls - calls;
    for (let i = 0; i < 6; i++) {
      t.clock.advance(600);
      await t.a.getToken('ba_1', 300);
    }

    // Assess: no write after the first mark; each later vend reads the item once
    expect(firstMark).toBe(Math.floor(t.clock.now() / 1000) - 3600);
    expect(callsAtOnce).toBe(0);
    expect(t.store.calls - calls).toBe(6);
    expect(t.store.items.get('TOKEN#ba_1')?.lastUsedAt).toBe(firstMark);
  });

  it("counts another instance's mark as its own: sparse vends over fresh instances cost one store call each", async () => {
    // Prepare: instance a mints and marks the scope
    const t = setup();
    await t.a.getToken('ba_1', 300);
    const firstMark = t.store.items.get('TOKEN#ba_1')?.lastUsedAt ?? Number.NaN;
    const vendOnFreshInstance = async (name: string): Promise<number> => {
      const before = t.store.calls;
      await t.instance(name).getToken('ba_1', 300);
      return t.store.calls - before;
    };

    // Act: a vend every 10 s for 5 minutes, each on a fresh instance
    const calls: number[] = [];
    for (let i = 1; i <= 30; i++) {
      t.clock.advance(10);
      calls.push(await vendOnFreshInstance(`fresh-${i}`));
    }

    // Assess: a read each, and the mark of the token stays the first one
    expect(calls).toEqual(Array(30).fill(1));
    expect(t.store.items.get('TOKEN#ba_1')?.lastUsedAt).toBe(firstMark);
  });

  it('renews a mark older than the stored token: the refresh reads it as "not vended since this token was minted"', async () => {
    // Prepare: a marks tok-1; a minute later a forced refresh stores tok-2
    const t = setup();
    await t.a.getToken('ba_1', 300);
    t.clock.advance(60);
    await t.a.refresh('ba_1');
    const before = t.store.calls;

    // Act
    const result = await t.b.getToken('ba_1', 300);

    // Assess: b reads tok-2 and marks it, though the old mark is only a minute old
    const item = t.store.items.get('TOKEN#ba_1');
    expect(result.token.accessToken).toBe('tok-2');
    expect(t.store.calls - before).toBe(2);
    expect(item?.lastUsedAt).toBeGreaterThanOrEqual(
      item?.token?.issuedAt ?? Number.POSITIVE_INFINITY,
    );
  });

  it('a failed mark is not retried on every vend of that instance; the next instance that reads the item writes it', async () => {
    // Prepare: an operator refresh stores tok-1 (no mark: nobody vended it); a's mark of it fails
    const t = setup();
    await t.instance('operator').refresh('ba_1');
    const markUsed = t.store.markUsed.bind(t.store);
    const attempts: string[] = [];
    t.store.markUsed = async (pk, at) => {
      attempts.push(pk);
      if (attempts.length === 1) throw new Error('DynamoDB UpdateItem failed (TimeoutError)');
      return markUsed(pk, at);
    };
    await t.a.getToken('ba_1', 300);

    // Act: a vends again after its L1 entry is gone; then b vends
    t.clock.advance(90);
    await t.a.getToken('ba_1', 300);
    const afterA = attempts.length;
    await t.b.getToken('ba_1', 300);

    // Assess: a did not try again (a store in trouble gets no write per vend); b marked the token
    const item = t.store.items.get('TOKEN#ba_1');
    expect(afterA).toBe(1);
    expect(attempts).toHaveLength(2);
    expect(item?.lastUsedAt).toBeGreaterThanOrEqual(
      item?.token?.issuedAt ?? Number.POSITIVE_INFINITY,
    );
  });

  describe('the token a vend serves is marked, whoever marked the scope just before', () => {
    // Regression: a mark read from the item (or made here) less than 3 minutes
    // ago stopped the vend from marking, even when it served a newer token than
    // that mark covered. The refresh then found the new token "not vended since
    // it was minted" and, once the window passed, let it run out: a caller that
    // comes back once per token waited on the provider.
    const inUseAfterTheWindow = (t: ReturnType<typeof setup>) => {
      const item = t.store.items.get('TOKEN#ba_1');
      if (!item) throw new Error('no item');
      return isInUse(item, Math.floor(t.clock.now() / 1000) + 3601, 3600);
    };

    it('when the caller reported the old token revoked and the vend minted a new one', async () => {
      const t = setup();
      await t.a.getToken('ba_1', 300);
      t.clock.advance(REVOCATION_MIN_AGE_SECONDS);

      const result = await t.b.getToken('ba_1', 300, fingerprint('tok-1'));

      expect(result.token.accessToken).toBe('tok-2');
      expect(inUseAfterTheWindow(t)).toBe(true);
    });

    it('when an operator refresh replaced the token this instance marked a minute before', async () => {
      const t = setup();
      await t.a.getToken('ba_1', 300);
      t.clock.advance(60);
      await t.instance('operator').refresh('ba_1');
      t.clock.advance(61); // a's L1 entry (60 s at most) is gone

      const result = await t.a.getToken('ba_1', 300);

      expect(result.token.accessToken).toBe('tok-2');
      expect(inUseAfterTheWindow(t)).toBe(true);
    });

    it('when an operator invalidated the scope and the next vend minted anew', async () => {
      const t = setup();
      await t.a.getToken('ba_1', 300);
      await t.store.delete('TOKEN#ba_1'); // admin invalidate
      t.clock.advance(61); // a's L1 entry is gone

      const result = await t.a.getToken('ba_1', 300);

      expect(result.token.accessToken).toBe('tok-2');
      expect(inUseAfterTheWindow(t)).toBe(true);
    });

    it('when its clock lags the instance that minted, with one write, not one per vend', async () => {
      // The mint is dated by a clock 30 s ahead; this instance's clock is 30 s behind.
      const t = setup();
      const ahead = t.instance(
        'ahead',
        t.credentials,
        t.provider.mint,
        new SkewedClock(t.clock, 30_000),
      );
      const lagging = t.instance(
        'lagging',
        t.credentials,
        t.provider.mint,
        new SkewedClock(t.clock, -30_000),
      );
      await ahead.refresh('ba_1');
      const before = t.store.calls;

      for (let i = 0; i < 5; i++) {
        await lagging.getToken('ba_1', 300);
        t.clock.advance(5);
      }

      expect(inUseAfterTheWindow(t)).toBe(true);
      expect(t.store.calls - before).toBe(2); // one read, one mark
    });
  });

  it('a failed mark never fails the vend', async () => {
    const t = setup();
    t.store.markUsed = async () => {
      throw new Error('DynamoDB UpdateItem failed (TimeoutError)');
    };

    const result = await t.a.getToken('ba_1', 300);

    expect(result.token.accessToken).toBe('tok-1');
  });
});
