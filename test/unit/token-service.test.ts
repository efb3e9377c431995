import { createHash } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { StoreUnavailableError, UpstreamUnavailableError } from '../../functions/core/errors.js';
import { fingerprint } from '../../functions/core/fingerprint.js';
import { REVOCATION_MIN_AGE_SECONDS, TokenService } from '../../functions/core/token-service.js';
import { SkewedClock } from '../support/fleet.js';
import { CREDS, setup, storeToken } from '../support/token-service-fixture.js';

describe('TokenService', () => {
  let t: ReturnType<typeof setup>;
  beforeEach(() => {
    t = setup();
  });

  it('mints on a miss and records issued_at, expires_at from expires_in and the secret version', async () => {
    const before = Math.floor(t.clock.now() / 1000);

    const { token, outcome } = await t.a.getToken('ba_1', 300);

    expect(outcome).toEqual({ tier: 'provider', refreshed: false, waited: false, degraded: false });
    expect(token.issuedAt).toBe(before);
    expect(token.expiresAt).toBe(before + 7200);
    expect(token.credentialsVersion).toBe('v1');
    expect(t.store.items.get('TOKEN#ba_1')?.token?.expiresAt).toBe(before + 7200);
  });

  it('serves from L1, then from L2 in another instance, without minting again', async () => {
    await t.a.getToken('ba_1', 300);

    const l1 = await t.a.getToken('ba_1', 300);
    const l2 = await t.b.getToken('ba_1', 300);

    expect(l1.outcome.tier).toBe('l1');
    expect(l2.outcome.tier).toBe('l2');
    expect(l2.token.accessToken).toBe('tok-1');
    expect(t.provider.state.mints).toBe(1);
  });

  it('holds an L1 entry at most 60 s, so an invalidation spreads within a minute', async () => {
    await t.a.getToken('ba_1', 300);
    t.store.items.clear();

    const within = await t.a.getToken('ba_1', 300);
    t.clock.advance(60);
    const after = await t.a.getToken('ba_1', 300);

    expect(within.outcome.tier).toBe('l1');
    expect(after.outcome.tier).toBe('provider');
    expect(after.token.accessToken).toBe('tok-2');
  });

  it('never serves from L1 past expires_at - min_ttl', async () => {
    const t2 = setup({ config: { refreshAheadSeconds: 60, l1MaxAgeSeconds: 10_000 } });
    await t2.a.getToken('ba_1', 300);
    t2.clock.advance(7200 - 1000);

    const tooShort = await t2.a.getToken('ba_1', 1200);

    expect(tooShort.token.accessToken).toBe('tok-2');
    expect(tooShort.token.expiresAt - Math.floor(t2.clock.now() / 1000)).toBeGreaterThan(1200);
  });

  it('inside the refresh-ahead window, one caller refreshes while others get the current token', async () => {
    await t.a.getToken('ba_1', 300);
    t.clock.advance(7200 - 800);
    // b holds the lease (as if refreshing right now)
    await t.store.tryAcquireLease('TOKEN#ba_1', 'b', t.clock.now(), t.clock.now() + 10_000);

    const other = await t.a.getToken('ba_1', 300);

    expect(other.token.accessToken).toBe('tok-1');
    expect(t.provider.state.mints).toBe(1);
  });

  it('the caller that wins the lease in the window refreshes and returns the new token', async () => {
    await t.a.getToken('ba_1', 300);
    t.clock.advance(7200 - 800);

    const refreshed = await t.b.getToken('ba_1', 300);

    expect(refreshed.token.accessToken).toBe('tok-2');
    expect(refreshed.outcome).toMatchObject({ tier: 'provider', refreshed: true });
  });

  it('keeps serving the current token when a refresh-ahead fails, and backs off', async () => {
    await t.a.getToken('ba_1', 300);
    t.clock.advance(7200 - 800);
    t.provider.state.fail = new UpstreamUnavailableError('down');

    const first = await t.b.getToken('ba_1', 300);
    const second = await t.instance('c').getToken('ba_1', 300);

    expect(first.token.accessToken).toBe('tok-1');
    expect(second.token.accessToken).toBe('tok-1');
    expect(t.provider.state.mints).toBe(2);
  });

  it('shares one mint among concurrent callers of one instance', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, () => t.a.getToken('ba_1', 300)));

    expect(new Set(results.map((r) => r.token.accessToken))).toEqual(new Set(['tok-1']));
    expect(t.provider.state.mints).toBe(1);
  });

  it('re-mints a token of an older secret version once the new version is seen', async () => {
    await t.a.getToken('ba_1', 300);
    t.credentials.set({ ...CREDS, version: 'v2' });

    const fromL1 = await t.a.getToken('ba_1', 300);
    const fromL2 = await t.b.getToken('ba_1', 300);

    expect(fromL1.token.accessToken).toBe('tok-2');
    expect(fromL1.token.credentialsVersion).toBe('v2');
    expect(fromL2.token.accessToken).toBe('tok-2');
  });

  it('caps min_ttl at half the lifetime when the provider issues shorter-lived tokens', async () => {
    const short = setup({ expiresIn: 600 });

    const first = await short.a.getToken('ba_1', 3600);
    const second = await short.b.getToken('ba_1', 3600);

    expect(first.token.expiresAt - first.token.issuedAt).toBe(600);
    expect(second.token.accessToken).toBe('tok-1');
    expect(short.provider.state.mints).toBe(1);
  });

  it('serves degraded when the store is down: mints itself, then serves from L1', async () => {
    t.store.down = true;

    const first = await t.a.getToken('ba_1', 300);
    t.a.forget();
    const fresh = await t.a.getToken('ba_1', 300);
    t.clock.advance(30);
    const second = await t.a.getToken('ba_1', 300);

    expect(first.outcome).toMatchObject({ tier: 'provider', degraded: true });
    expect(fresh.outcome).toMatchObject({ tier: 'provider', degraded: true });
    expect(second.outcome.tier).toBe('l1');
    expect(second.token.accessToken).toBe('tok-2');
    expect(t.logger.warn).toHaveBeenCalledWith(
      'token store unavailable; serving degraded',
      expect.objectContaining({ operation: 'lookup' }),
    );
  });

  it('treats an item it cannot unseal as a miss and logs it', async () => {
    await t.a.getToken('ba_1', 300);
    const stranger = setup();
    stranger.store.items.set('TOKEN#ba_1', t.store.items.get('TOKEN#ba_1')!);

    const result = await stranger.a.getToken('ba_1', 300);

    expect(result.outcome.tier).toBe('provider');
    expect(stranger.logger.warn).toHaveBeenCalledWith(
      'cached token could not be unsealed; re-minting',
      expect.objectContaining({ key: 'TOKEN#ba_1' }),
    );
  });

  it('waits for another instance holding the lease and takes the token it stores', async () => {
    // Prepare: b holds the lease; a asks and starts waiting
    await t.store.tryAcquireLease('TOKEN#ba_1', 'b', t.clock.now(), t.clock.now() + 10_000);
    const waiting = t.a.getToken('ba_1', 300);
    await new Promise((resolve) => setImmediate(resolve));

    // Act: b stores its token
    const now = Math.floor(t.clock.now() / 1000);
    const sealed = await t.sealer.seal('tok-from-b', 'TOKEN#ba_1');
    const meta = {
      tokenType: 'Bearer',
      scope: 'ba_1',
      issuedAt: now,
      expiresAt: now + 7200,
      credentialsVersion: 'v1',
    } as const;
    await t.store.putToken('TOKEN#ba_1', { ...meta, sealed }, 'b');
    const result = await waiting;

    // Assess
    expect(result.token.accessToken).toBe('tok-from-b');
    expect(result.outcome).toMatchObject({ tier: 'l2', waited: true });
    expect(t.provider.state.mints).toBe(0);
  });

  it('does not re-mint a token another instance stored after this one read the item', async () => {
    // Prepare: a's token is stored; b's first look is stale and sees no item
    await t.a.getToken('ba_1', 300);
    t.store.leaseIfAbsent = async () => ({ leased: false, item: undefined });
    const tryLease = t.store.tryAcquireLease.bind(t.store);
    let leaseAttempts = 0;
    t.store.tryAcquireLease = async (...args) => {
      leaseAttempts++;
      return tryLease(...args);
    };

    // Act
    const result = await t.b.getToken('ba_1', 300);

    // Assess: its lease attempt names the item it read (none) and is refused
    expect(leaseAttempts).toBe(1);
    expect(result.token.accessToken).toBe('tok-1');
    expect(t.provider.state.mints).toBe(1);
  });

  it('does not re-mint a token another instance stored in the same second as the one this one read', async () => {
    // Regression (review): the lease condition compared expires_at alone, and
    // a reported token replaced in the second it was minted (same lifetime)
    // has the same expires_at: a caller that read it took the lease and minted again.
    await storeToken(t, 'ba_1', { accessToken: 'old', version: 'v1', secondsLeft: 7200 });
    const reported = fingerprint('old');
    const tryLease = t.store.tryAcquireLease.bind(t.store);
    let raced = false;
    t.store.tryAcquireLease = async (...args) => {
      if (args[1] === 'b' && !raced) {
        raced = true;
        await t.a.getToken('ba_1', 300, reported); // a replaces the token meanwhile
      }
      return tryLease(...args);
    };

    const result = await t.b.getToken('ba_1', 300, reported);

    expect(raced).toBe(true);
    expect(result.token.accessToken).toBe('tok-1');
    expect(t.provider.state.mints).toBe(1);
  });

  it('two lease attempts of one instance in the same millisecond never both hold the lease', async () => {
    // The stores take a refusal showing the caller's own owner and end for its
    // own applied write (a lost answer): two attempts must never share an end.
    await storeToken(t, 'ba_1', { accessToken: 'old', version: 'v1', secondsLeft: 100 });

    const results = await Promise.all([t.a.refresh('ba_1'), t.a.refresh('ba_1')]);

    expect(results.map((r) => r.status).sort()).toEqual(['busy', 'refreshed']);
    expect(t.provider.state.mints).toBe(1);
  });

  it('frees the lease when the new token cannot be sealed, so others need not wait it out', async () => {
    const failing = setup();
    const broken = new TokenService({
      store: failing.store,
      sealer: {
        seal: () => Promise.reject(new Error('KMS down')),
        unseal: () => Promise.reject(new Error('x')),
      },
      credentials: failing.credentials,
      mint: failing.provider.mint,
      clock: failing.clock,
      random: () => 0.5,
      logger: failing.logger,
      instanceId: 'broken',
    });
    const started = failing.clock.now();

    const first = await broken.getToken('ba_1', 300);
    const second = await failing.b.getToken('ba_1', 300);

    expect(first.outcome.degraded).toBe(true);
    expect(failing.store.items.get('TOKEN#ba_1')?.leaseOwner).toBeUndefined();
    expect(second.outcome.waited).toBe(false);
    expect(failing.clock.now() - started).toBeLessThan(1000);
  });

  it('re-reads the secret before treating a newer-version token as stale', async () => {
    // Prepare: b's cached secret is v1, but the table holds a v2 token
    const reads: Array<boolean | undefined> = [];
    const v2 = setup();
    v2.credentials.set({ ...CREDS, version: 'v2' });
    await v2.a.getToken('ba_1', 300);
    const lagging = new TokenService({
      store: v2.store,
      sealer: v2.sealer,
      credentials: {
        get: async (options) => {
          reads.push(options?.forceRefresh);
          return options?.forceRefresh ? { ...CREDS, version: 'v2' } : CREDS;
        },
      },
      mint: v2.provider.mint,
      clock: v2.clock,
      random: () => 0.5,
      logger: v2.logger,
      instanceId: 'lagging',
    });

    // Act
    const result = await lagging.getToken('ba_1', 300);

    // Assess
    expect(result.token.accessToken).toBe('tok-1');
    expect(v2.provider.state.mints).toBe(1);
    expect(reads).toContain(true);
  });

  it('gives callers during the back-off the same error as the failed refresh', async () => {
    const { UpstreamCredentialsRejectedError } = await import('../../functions/core/errors.js');
    t.provider.state.fail = new UpstreamCredentialsRejectedError('rejected');

    const first = await t.a.getToken('ba_1', 300).catch((e) => e);
    const second = await t.b.getToken('ba_1', 300).catch((e) => e);

    expect(first.code).toBe('upstream_credentials_rejected');
    expect(second.code).toBe('upstream_credentials_rejected');
    expect(t.provider.state.mints).toBe(1);
  });

  it('backs off for exactly its length: the provider is asked again 5 s after a failure, not later', async () => {
    t.provider.state.fail = new UpstreamUnavailableError('down');
    const failed = await t.a.getToken('ba_1', 300).catch((e) => e);
    t.provider.state.fail = undefined;

    await t.clock.sleep(4999);
    const during = await t.b.getToken('ba_1', 300).catch((e) => e);
    await t.clock.sleep(1);
    const after = await t.b.getToken('ba_1', 300);

    expect(failed).toBeInstanceOf(UpstreamUnavailableError);
    expect(during).toBeInstanceOf(UpstreamUnavailableError);
    expect(after.token.accessToken).toBe('tok-2');
  });

  it('a scheduled refresh backs off after a failed refresh; an operator refresh does not', async () => {
    // Prepare: a's refresh-ahead fails 600 s before expiry; it keeps serving the current token
    await t.a.getToken('ba_1', 300);
    t.clock.advance(7200 - 600);
    t.provider.state.fail = new UpstreamUnavailableError('down');
    const current = await t.a.getToken('ba_1', 300);
    t.provider.state.fail = undefined;
    const mints = t.provider.state.mints;

    // Act: within the back-off, the schedule, then an operator
    const scheduled = await t.b.refresh('ba_1', { dueWithinSeconds: 360 });
    const forced = await t.b.refresh('ba_1');

    // Assess
    expect(current.token.accessToken).toBe('tok-1');
    expect(scheduled).toEqual({ status: 'busy' });
    expect(forced.status).toBe('refreshed');
    expect(t.provider.state.mints).toBe(mints + 1);
  });

  it('regression: a refresh whose new token DynamoDB would not store throws the store error, not "refreshed"', async () => {
    // Prepare: a token is cached; the table then refuses writes but still answers reads
    await t.a.getToken('ba_1', 300);
    const cached = await t.store.get('TOKEN#ba_1');
    t.store.putToken = () =>
      Promise.reject(new StoreUnavailableError('DynamoDB UpdateItem failed'));

    // Act
    const error = await t.b.refresh('ba_1').catch((e: unknown) => e);

    // Assess: the cache still holds tok-1, and the refresh says it failed
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((await t.store.get('TOKEN#ba_1'))?.token?.sealed).toEqual(cached?.token?.sealed);
    expect(t.provider.state.mints).toBe(2);
  });

  it('a token write DynamoDB refuses records no failure: the next caller is served, not told the provider failed', async () => {
    // Only a failed seal is recorded (refresh-failure.ts); a refused write
    // recorded as a failure would answer every caller 503 for the back-off.
    const put = t.store.putToken.bind(t.store);
    let refusals = 1;
    t.store.putToken = (...args) =>
      refusals-- > 0
        ? Promise.reject(new StoreUnavailableError('DynamoDB UpdateItem failed'))
        : put(...args);

    const first = await t.a.getToken('ba_1', 300);
    const next = await t.b.getToken('ba_1', 300);

    expect(first.outcome.degraded).toBe(true);
    expect((await t.store.get('TOKEN#ba_1'))?.failure).toBeUndefined();
    expect(next.token.accessToken).toEqual(expect.any(String));
  });

  it('regression: a refresh whose lease was taken over before its token was stored answers busy, not "refreshed"', async () => {
    await t.a.getToken('ba_1', 300);
    t.store.putToken = async () => false;

    const result = await t.b.refresh('ba_1');

    expect(result).toEqual({ status: 'busy' });
  });

  it('marks no use while DynamoDB is down: a degraded vend makes no store call but its failed first look', async () => {
    t.store.down = true;
    const before = t.store.calls;

    const result = await t.a.getToken('ba_1', 300);

    expect(result.outcome).toMatchObject({ tier: 'provider', degraded: true });
    // The first look: its lease-if-absent write, and the read that follows a failed one.
    expect(t.store.calls - before).toBe(2);
  });

  it('backs off per instance when both the store and the provider fail', async () => {
    t.store.down = true;
    t.provider.state.fail = new UpstreamUnavailableError('down', 3);

    const first = await t.a.getToken('ba_1', 300).catch((e) => e);
    const second = await t.a.getToken('ba_1', 300).catch((e) => e);
    t.clock.advance(6);
    const third = await t.a.getToken('ba_1', 300).catch((e) => e);

    expect([first.code, second.code, third.code]).toEqual(Array(3).fill('upstream_unavailable'));
    expect(t.provider.state.mints).toBe(2);
  });

  it('re-mints for min_ttl when the token is short of it, even with short-lived tokens', async () => {
    const short = setup({ expiresIn: 1000 });
    await short.a.getToken('ba_1', 300);
    short.clock.advance(450);

    const result = await short.b.getToken('ba_1', 600);

    expect(result.token.accessToken).toBe('tok-2');
  });

  describe('a token reported as revoked (by its fingerprint)', () => {
    const fingerprintOf = (token: string) =>
      createHash('sha256').update(token).digest('hex').slice(0, 16);

    it('is replaced under the lease however long it has left, once for all reporting instances', async () => {
      // Regression (fault matrix): a revoked token with 6600 s left was served again to a
      // caller asking with min_ttl 3600 after a 401.
      await t.a.getToken('ba_1', 300);
      await t.b.getToken('ba_1', 300);
      t.clock.advance(600);

      const fromA = await t.a.getToken('ba_1', 3600, fingerprintOf('tok-1'));
      const fromB = await t.b.getToken('ba_1', 3600, fingerprintOf('tok-1'));
      const plain = await t.instance('c').getToken('ba_1', 300);

      expect(fromA.token.accessToken).toBe('tok-2');
      expect(fromA.outcome.tier).toBe('provider');
      expect(fromB.token.accessToken).toBe('tok-2');
      expect(plain.token.accessToken).toBe('tok-2');
      expect(t.provider.state.mints).toBe(2);
    });

    it('replaces a token revoked moments after it was minted, but a caller looping on reports makes at most one mint a minute', async () => {
      await t.a.getToken('ba_1', 300);
      const replaced = await t.a.getToken('ba_1', 300, fingerprintOf('tok-1'));

      // the looping caller reports each new token at once, again and again
      const loops = [];
      for (let i = 0; i < 5; i++)
        loops.push(await t.a.getToken('ba_1', 300, fingerprintOf('tok-2')));
      t.clock.advance(REVOCATION_MIN_AGE_SECONDS);
      const aMinuteLater = await t.a.getToken('ba_1', 300, fingerprintOf('tok-2'));

      expect(replaced.token.accessToken).toBe('tok-2');
      expect(loops.map((r) => r.token.accessToken)).toEqual(Array(5).fill('tok-2'));
      expect(aMinuteLater.token.accessToken).toBe('tok-3');
      expect(t.provider.state.mints).toBe(3);
    });

    it('regression: a caller reporting each new token to another of 50 instances makes at most one mint a minute, not one per instance', async () => {
      await t.a.getToken('ba_1', 300);
      const instances = Array.from({ length: 50 }, (_, i) => t.instance(`i${i}`));
      let current = 'tok-1';

      for (const instance of instances) {
        const result = await instance.getToken('ba_1', 300, fingerprintOf(current));
        current = result.token.accessToken;
      }
      t.clock.advance(REVOCATION_MIN_AGE_SECONDS);
      const aMinuteLater = await instances[1]!.getToken('ba_1', 300, fingerprintOf(current));

      expect(current).toBe('tok-2');
      expect(aMinuteLater.token.accessToken).toBe('tok-3');
      expect(t.provider.state.mints).toBe(3);
    });

    it('a report reaching an instance that has just met the replacement is damped for a minute from then, however old the replacement is', async () => {
      // The age is how long the reading instance has known the token, by its
      // own clock: a cold instance cannot tell a replacement's true age.
      await t.a.getToken('ba_1', 300);
      await t.a.getToken('ba_1', 300, fingerprintOf('tok-1')); // tok-2 replaces it
      t.clock.advance(600);
      const cold = t.instance('cold');

      const atFirstSight = await cold.getToken('ba_1', 300, fingerprintOf('tok-2'));
      t.clock.advance(REVOCATION_MIN_AGE_SECONDS - 1);
      const aSecondShort = await cold.getToken('ba_1', 300, fingerprintOf('tok-2'));
      t.clock.advance(1);
      const aMinuteOn = await cold.getToken('ba_1', 300, fingerprintOf('tok-2'));

      expect(atFirstSight.token.accessToken).toBe('tok-2');
      expect(aSecondShort.token.accessToken).toBe('tok-2');
      expect(aMinuteOn.token.accessToken).toBe('tok-3');
      expect(t.provider.state.mints).toBe(3);
    });

    it('an instance that read a replacement earlier, for any caller, counts its minute from that read', async () => {
      await t.a.getToken('ba_1', 300);
      await t.a.getToken('ba_1', 300, fingerprintOf('tok-1')); // tok-2 replaces it
      await t.b.getToken('ba_1', 300); // b reads tok-2 for a caller that reports nothing
      t.clock.advance(REVOCATION_MIN_AGE_SECONDS);

      const reported = await t.b.getToken('ba_1', 300, fingerprintOf('tok-2'));

      expect(reported.token.accessToken).toBe('tok-3');
    });

    it('across instances whose clocks disagree by a minute, a looping caller gets at most one replacement a minute, in all', async () => {
      // Each instance dates a replacement by its own first sight of it, never
      // by the minter's issued_at, so no skew shortens the minute.
      const clocks = [-30_000, 30_000, 0].map((skewMs) => new SkewedClock(t.clock, skewMs));
      const instances = clocks.map((clock, i) =>
        t.instance(`skewed-${i}`, t.credentials, t.provider.mint, clock),
      );
      let current = (await instances[0]!.getToken('ba_1', 300)).token.accessToken;

      // Ten minutes of a report every 5 s, each to the next instance.
      for (let second = 0; second < 600; second += 5) {
        const instance = instances[(second / 5) % instances.length]!;
        current = (await instance.getToken('ba_1', 300, fingerprintOf(current))).token.accessToken;
        t.clock.advance(5);
      }

      expect(t.provider.state.mints - 1).toBeLessThanOrEqual(10);
      expect(t.provider.state.mints - 1).toBeGreaterThanOrEqual(5);
    });

    it("regression: damping compared the minter's issued_at with a reader's clock, so a reader running 30 s ahead replaced a replacement 30 s old", async () => {
      // A replacement's age, for damping, is how long the reading instance has
      // itself known it (its own clock), never its issued_at against this clock.
      const ahead = t.instance(
        'ahead',
        t.credentials,
        t.provider.mint,
        new SkewedClock(t.clock, 30_000),
      );
      await t.a.getToken('ba_1', 300);
      await t.a.getToken('ba_1', 300, fingerprintOf('tok-1')); // tok-2 replaces it
      const seen = await ahead.getToken('ba_1', 300); // ahead knows tok-2 from now on
      t.clock.advance(30); // by ahead's clock, tok-2 was issued 60 s ago

      const thirtySecondsIn = await ahead.getToken('ba_1', 300, fingerprintOf('tok-2'));
      t.clock.advance(29);
      const fiftyNineSecondsIn = await ahead.getToken('ba_1', 300, fingerprintOf('tok-2'));
      t.clock.advance(1);
      const aMinuteIn = await ahead.getToken('ba_1', 300, fingerprintOf('tok-2'));

      expect(seen.token.accessToken).toBe('tok-2');
      expect(thirtySecondsIn.token.accessToken).toBe('tok-2');
      expect(fiftyNineSecondsIn.token.accessToken).toBe('tok-2');
      expect(aMinuteIn.token.accessToken).toBe('tok-3');
      expect(t.provider.state.mints).toBe(3);
    });

    it('a report naming another token uses up nothing: the real report that follows is honoured', async () => {
      await t.a.getToken('ba_1', 300);
      await t.a.getToken('ba_1', 300, fingerprintOf('tok-0'));

      const result = await t.b.getToken('ba_1', 300, fingerprintOf('tok-1'));

      expect(result.token.accessToken).toBe('tok-2');
    });

    it('causes no mint when the fingerprint is not the current token', async () => {
      await t.a.getToken('ba_1', 300);

      const result = await t.b.getToken('ba_1', 300, fingerprintOf('tok-0'));

      expect(result.token.accessToken).toBe('tok-1');
      expect(t.provider.state.mints).toBe(1);
    });
  });
});
