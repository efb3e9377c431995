/**
 * The credential chain every Lambda bundle uses in place of the SDK's: the
 * runtime's variables first, then the container credentials endpoint, each
 * answer kept until 5 minutes before it expires, and a clear error when
 * Lambda provided neither.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  defaultProvider,
  NO_LAMBDA_CREDENTIALS,
} from '../../functions/adapters/lambda-credential-chain.js';
import {
  type ServedCredentials,
  startCredentialsEndpoint,
} from '../support/container-credentials.js';

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
    let endpoint: Awaited<ReturnType<typeof startCredentialsEndpoint>>;

    beforeEach(async () => {
      n = 0;
      endpoint = await startCredentialsEndpoint(() => served(++n, 60));
      vi.stubEnv('AWS_CONTAINER_CREDENTIALS_FULL_URI', `${endpoint.url}/credentials`);
      vi.stubEnv('AWS_CONTAINER_AUTHORIZATION_TOKEN', 'container-authorization');
    });

    afterEach(async () => {
      await endpoint.close();
    });

    it('fetches them with the authorization token when the environment has none', async () => {
      const credentials = await defaultProvider()();

      expect(credentials).toMatchObject({
        accessKeyId: 'ASIACONTAINER1',
        secretAccessKey: 'container-secret-1',
        sessionToken: 'container-session-1',
      });
      expect(endpoint.credentialRequests[0]?.authorization).toBe('container-authorization');
    });

    it('fetches once for many calls while the credentials are good for more than 5 minutes', async () => {
      const provider = defaultProvider();

      const answers = await Promise.all(Array.from({ length: 5 }, () => provider()));
      const later = await provider();

      expect(new Set([...answers, later].map((c) => c.accessKeyId))).toEqual(
        new Set(['ASIACONTAINER1']),
      );
      expect(endpoint.credentialRequests).toHaveLength(1);
    });

    it('fetches again once the credentials are within 5 minutes of expiring', async () => {
      // The SDK's memoizer reads Date.now(); only the date is faked.
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
      try {
        const provider = defaultProvider();
        const first = await provider();

        vi.setSystemTime(Date.now() + 54 * 60_000);
        const stillGood = await provider();
        vi.setSystemTime(Date.now() + 2 * 60_000);
        const renewed = await provider();

        expect([first, stillGood, renewed].map((c) => c.accessKeyId)).toEqual([
          'ASIACONTAINER1',
          'ASIACONTAINER1',
          'ASIACONTAINER2',
        ]);
        expect(endpoint.credentialRequests).toHaveLength(2);
      } finally {
        vi.useRealTimers();
      }
    });
  });

  it('says which variables Lambda should have set when neither source is there', async () => {
    const failure = await defaultProvider()().then(
      () => undefined,
      (error: unknown) => error,
    );

    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toBe(NO_LAMBDA_CREDENTIALS);
  });
});
