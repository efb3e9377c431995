/**
 * The credential chain every Lambda bundle uses in place of the SDK's: the
 * runtime's variables first, then the container credentials endpoint, each
 * answer kept until 5 minutes before it expires, and a clear error when
 * Lambda provided neither.
 */

import type { AwsCredentialIdentity } from '@smithy/types';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  cacheLikeTheSdk,
  defaultProvider,
  NO_LAMBDA_CREDENTIALS,
} from '../../functions/bundle-aliases/lambda-credential-chain.js';
import {
  type ServedCredentials,
  startCredentialsEndpoint,
} from '../support/container-credentials.js';
import { rejection } from '../support/rejection.js';

const CREDENTIAL_VARIABLES = [
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_CREDENTIAL_EXPIRATION',
  'AWS_PROFILE',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
  'AWS_CONTAINER_AUTHORIZATION_TOKEN',
  'AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE',
];

const inMinutes = (minutes: number): string =>
  new Date(Date.now() + minutes * 60_000).toISOString();

/** Expiring `expiresInMinutes` after the (possibly faked) current date. */
function served(n: number, expiresInMinutes: number): ServedCredentials {
  return {
    AccessKeyId: `ASIACONTAINER${n}`,
    SecretAccessKey: `container-secret-${n}`,
    Token: `container-session-${n}`,
    Expiration: inMinutes(expiresInMinutes),
  };
}

beforeEach(() => {
  for (const name of CREDENTIAL_VARIABLES) vi.stubEnv(name, undefined);
});

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('the Lambda credential chain', () => {
  it('reads the credentials the Lambda runtime puts in the environment', async () => {
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'ASIALAMBDA');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'lambda-secret');
    vi.stubEnv('AWS_SESSION_TOKEN', 'lambda-session');

    const credentials = await defaultProvider()();

    expect(credentials).toMatchObject({
      accessKeyId: 'ASIALAMBDA',
      secretAccessKey: 'lambda-secret',
      sessionToken: 'lambda-session',
    });
  });

  it('prefers the environment over a container endpoint that is also set', async () => {
    const endpoint = await startCredentialsEndpoint(() => served(1, 60));
    try {
      vi.stubEnv('AWS_ACCESS_KEY_ID', 'ASIALAMBDA');
      vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'lambda-secret');
      vi.stubEnv('AWS_CONTAINER_CREDENTIALS_FULL_URI', `${endpoint.url}/credentials`);

      const credentials = await defaultProvider()();

      expect(credentials.accessKeyId).toBe('ASIALAMBDA');
      expect(endpoint.credentialRequests).toHaveLength(0);
    } finally {
      await endpoint.close();
    }
  });

  describe('from the container credentials endpoint', () => {
    let n = 0;
    let down = false;
    let endpoint: Awaited<ReturnType<typeof startCredentialsEndpoint>>;
    // No retries, so a failing endpoint fails at once.
    const init = { maxRetries: 0, timeout: 1000 };

    beforeEach(async () => {
      n = 0;
      down = false;
      endpoint = await startCredentialsEndpoint(() => (down ? undefined : served(++n, 60)));
      vi.stubEnv('AWS_CONTAINER_CREDENTIALS_FULL_URI', `${endpoint.url}/credentials`);
      vi.stubEnv('AWS_CONTAINER_AUTHORIZATION_TOKEN', 'container-authorization');
      // The SDK's cache reads Date.now(); only the date is faked.
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    });

    afterEach(async () => {
      vi.useRealTimers();
      await endpoint.close();
    });

    const minutesLater = (minutes: number) => vi.setSystemTime(Date.now() + minutes * 60_000);

    it('fetches them with the authorization token when the environment has none', async () => {
      const credentials = await defaultProvider(init)();

      expect(credentials).toMatchObject({
        accessKeyId: 'ASIACONTAINER1',
        secretAccessKey: 'container-secret-1',
        sessionToken: 'container-session-1',
      });
      expect(endpoint.credentialRequests[0]?.authorization).toBe('container-authorization');
    });

    it('fetches once for many calls while the credentials are good for more than 5 minutes', async () => {
      const provider = defaultProvider(init);

      const answers = await Promise.all(Array.from({ length: 5 }, () => provider()));
      minutesLater(54);
      const later = await provider();

      expect(new Set([...answers, later].map((c) => c.accessKeyId))).toEqual(
        new Set(['ASIACONTAINER1']),
      );
      expect(endpoint.credentialRequests).toHaveLength(1);
    });

    it('fetches again in the background in the last 5 minutes, serving the cached ones meanwhile', async () => {
      const provider = defaultProvider(init);
      await provider();

      minutesLater(56);
      const meanwhile = await provider();
      await vi.waitFor(() => expect(endpoint.credentialRequests).toHaveLength(2));
      const renewed = await provider();

      expect(meanwhile.accessKeyId).toBe('ASIACONTAINER1');
      expect(renewed.accessKeyId).toBe('ASIACONTAINER2');
    });

    it('keeps serving the cached credentials while the endpoint fails in the last 5 minutes', async () => {
      const provider = defaultProvider(init);
      await provider();
      down = true;

      minutesLater(56);
      const first = await provider();
      await vi.waitFor(() => expect(endpoint.credentialRequests).toHaveLength(2));
      const second = await provider();
      await vi.waitFor(() => expect(endpoint.credentialRequests).toHaveLength(3));
      down = false;
      await provider();
      await vi.waitFor(() => expect(endpoint.credentialRequests).toHaveLength(4));
      const recovered = await provider();

      expect([first, second].map((c) => c.accessKeyId)).toEqual([
        'ASIACONTAINER1',
        'ASIACONTAINER1',
      ]);
      expect(recovered.accessKeyId).toBe('ASIACONTAINER2');
    });

    it('waits for a fetch once they have expired, and fails if the endpoint is down', async () => {
      const provider = defaultProvider(init);
      await provider();
      down = true;

      minutesLater(61);
      await rejection(provider(), Error);
      down = false;
      const fetched = await provider();

      expect(fetched.accessKeyId).toBe('ASIACONTAINER2');
    });

    it('takes the endpoint from the client configuration as well as from the environment', async () => {
      vi.stubEnv('AWS_CONTAINER_CREDENTIALS_FULL_URI', undefined);

      const credentials = await defaultProvider({
        ...init,
        awsContainerCredentialsFullUri: `${endpoint.url}/credentials`,
      })();

      expect(credentials.accessKeyId).toBe('ASIACONTAINER1');
    });
  });

  it('asks the link-local endpoint when AWS_CONTAINER_CREDENTIALS_RELATIVE_URI is set', async () => {
    vi.stubEnv('AWS_CONTAINER_CREDENTIALS_RELATIVE_URI', '/v2/credentials/lambda');

    const failure = await rejection(defaultProvider({ maxRetries: 0, timeout: 1 })(), Error);

    // Nothing answers at 169.254.170.2 here: the chain tried it (rather than
    // giving up, or reading the path as a whole URL, a TypeError).
    expect(failure).not.toBeInstanceOf(TypeError);
    expect(failure.message).not.toBe(NO_LAMBDA_CREDENTIALS);
  });

  it('says which variables Lambda should have set when neither source is there', async () => {
    const failure = await rejection(defaultProvider()(), Error);

    expect(failure.message).toBe(NO_LAMBDA_CREDENTIALS);
  });
});

describe('the cache, as the SDK caches its default chain', () => {
  const MINUTE = 60_000;
  let fetches: number;
  let failing: boolean;
  /** Each fetch answers credentials numbered in order, expiring in `lifetime` ms (none: no expiry). */
  let lifetime: number | undefined;
  const fetch = async (): Promise<AwsCredentialIdentity> => {
    fetches++;
    if (failing) throw new Error('endpoint down');
    return {
      accessKeyId: `AK${fetches}`,
      secretAccessKey: 'secret',
      ...(lifetime === undefined ? {} : { expiration: new Date(Date.now() + lifetime) }),
    };
  };

  beforeEach(() => {
    fetches = 0;
    failing = false;
    lifetime = 60 * MINUTE;
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  const later = (ms: number) => vi.setSystemTime(Date.now() + ms);

  it('refreshes exactly in the last 5 minutes, not before', async () => {
    const provider = cacheLikeTheSdk(fetch);
    await provider();

    later(55 * MINUTE - 1000);
    await provider();
    const before = fetches;
    later(2000);
    await provider();

    expect(before).toBe(1);
    expect(fetches).toBe(2);
  });

  it('starts one background fetch for many callers in the last 5 minutes', async () => {
    const provider = cacheLikeTheSdk(fetch);
    await provider();

    later(56 * MINUTE);
    const answers = await Promise.all(Array.from({ length: 5 }, () => provider()));

    expect(answers.map((c) => c.accessKeyId)).toEqual(['AK1', 'AK1', 'AK1', 'AK1', 'AK1']);
    expect(fetches).toBe(2);
  });

  it('never fetches again credentials that do not expire', async () => {
    lifetime = undefined;
    const provider = cacheLikeTheSdk(fetch);

    await provider();
    later(24 * 60 * MINUTE);
    await provider();

    expect(fetches).toBe(1);
  });

  it('fetches on forceRefresh even while the cached ones are good, sharing one fetch', async () => {
    const provider = cacheLikeTheSdk(fetch);
    await provider();

    const forced = await Promise.all([
      provider({ forceRefresh: true }),
      provider({ forceRefresh: true }),
    ]);
    const next = await provider();

    expect(forced.map((c) => c.accessKeyId)).toEqual(['AK2', 'AK2']);
    expect(next.accessKeyId).toBe('AK2');
    expect(fetches).toBe(2);
  });

  it('gives a forced caller its own fetch even while a waited one runs', async () => {
    const provider = cacheLikeTheSdk(fetch);

    const [first, forced] = await Promise.all([provider(), provider({ forceRefresh: true })]);

    expect([first.accessKeyId, forced.accessKeyId]).toEqual(['AK1', 'AK2']);
    expect(fetches).toBe(2);
  });

  it('hands a failed forced fetch to its caller and keeps the cached credentials', async () => {
    const provider = cacheLikeTheSdk(fetch);
    await provider();
    failing = true;

    await rejection(provider({ forceRefresh: true }), Error);
    const cached = await provider();

    expect(cached.accessKeyId).toBe('AK1');
  });
});
