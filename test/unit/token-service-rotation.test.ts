import { describe, expect, it } from 'vitest';
import {
  UpstreamCredentialsRejectedError,
  UpstreamUnavailableError,
} from '../../functions/core/errors.js';
import type { ProviderCredentials } from '../../functions/core/ports.js';
import type { TokenGrant } from '../../functions/core/provider-client.js';
import { CREDS, SecretCache, setup, storeToken } from '../support/token-service-fixture.js';

const V1 = CREDS;
const V2 = { ...CREDS, secret: 's2', version: 'v2' };

describe('a rotation is never undone by an instance that still holds the old secret', () => {
  it('a re-read made for one scope does not stop the re-read for a version first seen in another (throttle per version)', async () => {
    // Prepare: the lagging instance re-reads once for ba_2 (which holds a v0 token)...
    const t = setup();
    const secret = new SecretCache(V1);
    const lagging = t.instance('lagging', secret);
    await storeToken(t, 'ba_2', { accessToken: 'tok-v0', version: 'v0', secondsLeft: 7000 });
    await lagging.getToken('ba_2', 300);
    const mintsBefore = t.provider.state.mints;
    // ...then the secret rotates to v2 and another instance stores a v2 token for ba_1
    secret.current = V2;
    secret.cached = V1;
    await storeToken(t, 'ba_1', { accessToken: 'tok-v2', version: 'v2', secondsLeft: 7000 });
    t.clock.advance(10);

    // Act
    const result = await lagging.getToken('ba_1', 300);

    // Assess
    expect(result.token.accessToken).toBe('tok-v2');
    expect(t.provider.state.mints).toBe(mintsBefore);
    expect(t.store.items.get('TOKEN#ba_1')?.token?.credentialsVersion).toBe('v2');
  });

  it('a waiter re-checks the version of the token the lease holder stored before it takes over', async () => {
    // Prepare: b (on v2) holds the lease; the lagging instance (cached v1) starts waiting
    const t = setup();
    const lagging = t.instance('lagging', new SecretCache(V2, V1));
    await t.store.tryAcquireLease('TOKEN#ba_1', 'b', t.clock.now(), t.clock.now() + 10_000);
    const waiting = lagging.getToken('ba_1', 300);
    await new Promise((resolve) => setImmediate(resolve));

    // Act: b stores its v2 token and frees the lease
    await storeToken(t, 'ba_1', { accessToken: 'tok-v2', version: 'v2', secondsLeft: 7200 }, 'b');
    const result = await waiting;

    // Assess
    expect(result.token.accessToken).toBe('tok-v2');
    expect(result.outcome.waited).toBe(true);
    expect(t.provider.state.mints).toBe(0);
    expect(t.store.items.get('TOKEN#ba_1')?.token?.credentialsVersion).toBe('v2');
  });

  it('a waiter that cannot re-read the secret serves the token the holder stored as unverified', async () => {
    // Prepare: b holds the lease; the lagging instance (cached v1, the secret unreadable now)
    // starts waiting
    const t = setup();
    const secret = new SecretCache(V2, V1);
    secret.down = true;
    const lagging = t.instance('lagging', secret);
    await t.store.tryAcquireLease('TOKEN#ba_1', 'b', t.clock.now(), t.clock.now() + 10_000);
    const waiting = lagging.getToken('ba_1', 300);
    await new Promise((resolve) => setImmediate(resolve));

    // Act: b stores a v2 token and frees the lease
    await storeToken(t, 'ba_1', { accessToken: 'tok-v2', version: 'v2', secondsLeft: 7200 }, 'b');
    const result = await waiting;

    // Assess: served, but as what it is: a token whose version this instance cannot check
    expect(result.token.accessToken).toBe('tok-v2');
    expect(result.outcome).toMatchObject({ tier: 'l2', degraded: true, waited: false });
    expect(t.provider.state.mints).toBe(0);
  });

  it('without a readable secret, a token of another version is served but never replaced', async () => {
    // Prepare: the lagging instance cannot re-read; the table holds a v2 token
    const t = setup();
    const secret = new SecretCache(V2, V1);
    secret.down = true;
    const lagging = t.instance('lagging', secret);
    await storeToken(t, 'ba_1', { accessToken: 'tok-v2', version: 'v2', secondsLeft: 7000 });
    await storeToken(t, 'ba_2', { accessToken: 'tok-v2b', version: 'v2', secondsLeft: 100 });

    // Act
    const served = await lagging.getToken('ba_1', 300);
    const short = await lagging.getToken('ba_2', 300).catch((e: unknown) => e);

    // Assess
    expect(served.token.accessToken).toBe('tok-v2');
    expect(served.outcome.degraded).toBe(true);
    expect(short).toBeInstanceOf(UpstreamUnavailableError);
    expect(t.provider.state.mints).toBe(0);
    expect(t.store.items.get('TOKEN#ba_2')?.token?.credentialsVersion).toBe('v2');
  });

  it('an expired token of a newer version is never overwritten by an instance on the old secret', async () => {
    // Prepare: the table holds an expired v2 token; the lagging instance holds v1
    const t = setup();
    await storeToken(t, 'ba_1', { accessToken: 'tok-v2', version: 'v2', secondsLeft: -5 });
    const secret = new SecretCache(V2, V1);
    secret.down = true;
    const lagging = t.instance('lagging', secret);

    // Act: the secret cannot be read, so v2 cannot be judged older...
    const refused = await lagging.getToken('ba_1', 300).catch((e: unknown) => e);
    const forced = await lagging.refresh('ba_1').catch((e: unknown) => e);
    // ...and once it can, the instance learns v2 and mints with it
    secret.down = false;
    t.clock.advance(31);
    const served = await lagging.getToken('ba_1', 300);

    // Assess
    expect(refused).toBeInstanceOf(UpstreamUnavailableError);
    expect(forced).toBeInstanceOf(UpstreamUnavailableError);
    expect(t.provider.state.seen.map((c) => c.version)).toEqual(['v2']);
    expect(served.token.credentialsVersion).toBe('v2');
    expect(t.store.items.get('TOKEN#ba_1')?.token?.credentialsVersion).toBe('v2');
  });

  it('re-mints over a token the re-read secret shows to be older', async () => {
    const t = setup();
    await storeToken(t, 'ba_1', { accessToken: 'tok-v0', version: 'v0', secondsLeft: 7000 });

    const result = await t.a.getToken('ba_1', 300);

    expect(result.token.accessToken).toBe('tok-1');
    expect(t.store.items.get('TOKEN#ba_1')?.token?.credentialsVersion).toBe(V1.version);
  });
});

describe('DynamoDB down after a rotation', () => {
  it('never serves from L1 a token minted with the rotated-out secret: it mints with the new one', async () => {
    // Prepare: the instance holds a v1 token in L1; the secret rotates to v2, which the
    // instance has read; then DynamoDB goes down
    const t = setup();
    const secret = new SecretCache(V1);
    const instance = t.instance('i', secret);
    const before = await instance.getToken('ba_1', 300);
    secret.current = V2;
    secret.cached = V2;
    t.store.down = true;

    // Act
    const result = await instance.getToken('ba_1', 300);

    // Assess
    expect(before.token).toMatchObject({ accessToken: 'tok-1', credentialsVersion: 'v1' });
    expect(result.token).toMatchObject({ accessToken: 'tok-2', credentialsVersion: 'v2' });
    expect(result.outcome).toMatchObject({ tier: 'provider', degraded: true });
    expect(t.provider.state.seen.at(-1)).toEqual(V2);
  });
});

describe('Secrets Manager unreadable at a cold start', () => {
  const cold = () => {
    const t = setup();
    const secret = new SecretCache(V1);
    secret.cached = undefined;
    secret.down = true;
    return { t, instance: t.instance('cold', secret) };
  };

  it('serves a still-valid L2 token, counted as degraded', async () => {
    const { t, instance } = cold();
    await storeToken(t, 'ba_1', { accessToken: 'tok-cached', version: 'v1', secondsLeft: 3000 });

    const result = await instance.getToken('ba_1', 300);

    expect(result.token.accessToken).toBe('tok-cached');
    expect(result.outcome).toMatchObject({ tier: 'l2', degraded: true });
    expect(t.provider.state.mints).toBe(0);
  });

  it.each([
    ['no token', undefined],
    ['an expired token', -10],
    ['a token short of min_ttl', 100],
  ])(
    'answers 503 upstream_unavailable with Retry-After when the table holds %s',
    async (_label, secondsLeft) => {
      const { t, instance } = cold();
      if (secondsLeft !== undefined) {
        await storeToken(t, 'ba_1', { accessToken: 'tok-cached', version: 'v1', secondsLeft });
      }

      const error = await instance.getToken('ba_1', 300).catch((e: unknown) => e);

      expect(error).toBeInstanceOf(UpstreamUnavailableError);
      expect((error as UpstreamUnavailableError).retryAfter).toBeGreaterThan(0);
      expect(t.provider.state.mints).toBe(0);
    },
  );

  it('answers 503, not 500, when DynamoDB is down as well', async () => {
    const { t, instance } = cold();
    t.store.down = true;

    await expect(instance.getToken('ba_1', 300)).rejects.toBeInstanceOf(UpstreamUnavailableError);
  });
});

describe('secret re-read after the provider answers 401', () => {
  /** A provider that rejects every secret but `accepted`. */
  const rejectingAllBut = (t: ReturnType<typeof setup>, accepted: string) => {
    const mint = t.provider.mint;
    return async (
      credentials: ProviderCredentials,
      scope: string | undefined,
      deadline: number,
    ): Promise<TokenGrant> => {
      if (credentials.version !== accepted) {
        t.provider.state.mints++;
        throw new UpstreamCredentialsRejectedError('rejected (HTTP 401).');
      }
      return mint(credentials, scope, deadline);
    };
  };

  it('re-reads the secret once and retries with the rotated one', async () => {
    const t = setup();
    const secret = new SecretCache(V2, V1);
    const instance = t.instance('i', secret, rejectingAllBut(t, 'v2'));

    const result = await instance.getToken('ba_1', 300);

    expect(result.token.credentialsVersion).toBe('v2');
    expect(secret.forcedReads).toBe(1);
    expect(t.provider.state.mints).toBe(2);
  });

  it.each([
    ['the re-read secret is unchanged', false],
    ['the secret cannot be re-read', true],
  ])(
    'answers upstream_credentials_rejected without a second attempt when %s',
    async (_label, down) => {
      const t = setup();
      const secret = new SecretCache(V1);
      await secret.get();
      secret.down = down;
      const service = t.instance('i', secret, rejectingAllBut(t, 'none'));

      const error = await service.getToken('ba_1', 300).catch((e: unknown) => e);

      expect(error).toBeInstanceOf(UpstreamCredentialsRejectedError);
      expect(secret.forcedReads).toBe(1);
      expect(t.provider.state.mints).toBe(1);
    },
  );

  it('answers a retryable upstream_unavailable, without a second attempt, when a re-read that found a new secret used up the lease', async () => {
    // Regression (review): it answered the rejection of the old secret, which
    // was recorded and answered 502 to every instance (the new secret included).
    const t = setup();
    const secret = new SecretCache(V2, V1);
    const read = secret.get.bind(secret);
    secret.get = async (options) => {
      if (options?.forceRefresh) t.clock.advance(10); // a slow re-read: the lease is over
      return read(options);
    };
    const service = t.instance('i', secret, rejectingAllBut(t, 'v2'));

    const error = await service.getToken('ba_1', 300).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(UpstreamUnavailableError);
    expect(error).toMatchObject({ status: 503 });
    expect(t.provider.state.mints).toBe(1);
    // Another instance, already on the new secret, is not answered 502 for the back-off.
    const other = t.instance('j', new SecretCache(V2), rejectingAllBut(t, 'v2'));
    const failure = await other.getToken('ba_1', 300).catch((e: unknown) => e);
    expect(failure).not.toBeInstanceOf(UpstreamCredentialsRejectedError);
  });
});
