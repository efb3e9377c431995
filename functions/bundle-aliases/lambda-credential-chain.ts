/**
 * The AWS SDK's default credential chain cut to the two sources a Lambda
 * function can have: the variables the runtime sets (`AWS_ACCESS_KEY_ID`,
 * `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), then the container
 * credentials endpoint (`AWS_CONTAINER_CREDENTIALS_FULL_URI` or
 * `_RELATIVE_URI`). Node.js functions get the first today; the second is
 * what the SDK's own chain reads next in any Lambda-like environment
 * (Lambda uses it for SnapStart, not offered for Node.js), kept so that a
 * runtime that moves to refreshable credentials is not left without any.
 *
 * Every Lambda bundle imports this module in place of
 * `@aws-sdk/credential-provider-node` (infra/lambda-bundling.ts); tests, the
 * local stack and the client package run the SDK's own chain. The full chain
 * (profiles, SSO, login, credential processes, web identity, EC2 instance
 * metadata) and the nested SDK clients it loads are 110 to 125 KB per bundle
 * that every cold start parsed and no Lambda function ever ran.
 *
 * Same `defaultProvider` signature as that package (its other two exports,
 * unused by the SDK clients, are left out), and the same caching: see
 * `cacheLikeTheSdk`.
 */
import { fromEnv } from '@aws-sdk/credential-provider-env';
import { type FromHttpOptions, fromHttp } from '@aws-sdk/credential-provider-http';
import type { defaultProvider as sdkDefaultProvider } from '@aws-sdk/credential-provider-node';
import { CredentialsProviderError, chain } from '@smithy/core/config';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';

type ChainInit = NonNullable<Parameters<typeof fromEnv>[0]> & FromHttpOptions;
type CachedProvider = ReturnType<typeof sdkDefaultProvider>;

/** The SDK's margin: credentials this close to expiring are fetched again. */
const REFRESH_BEFORE_EXPIRY_MS = 300_000;

export const NO_LAMBDA_CREDENTIALS =
  'No AWS credentials: neither AWS_ACCESS_KEY_ID with AWS_SECRET_ACCESS_KEY nor ' +
  'AWS_CONTAINER_CREDENTIALS_FULL_URI or _RELATIVE_URI is set. Lambda bundles read only ' +
  'the credentials the Lambda runtime provides.';

function fromContainer(init: ChainInit): AwsCredentialIdentityProvider {
  return async (properties) => {
    const configured =
      init.awsContainerCredentialsRelativeUri ??
      init.awsContainerCredentialsFullUri ??
      process.env.AWS_CONTAINER_CREDENTIALS_RELATIVE_URI ??
      process.env.AWS_CONTAINER_CREDENTIALS_FULL_URI;
    if (!configured) {
      throw new CredentialsProviderError(NO_LAMBDA_CREDENTIALS, {
        tryNextLink: false,
        ...(init.logger ? { logger: init.logger } : {}),
      });
    }
    return fromHttp(init)(properties);
  };
}

/**
 * Caches credentials as the SDK's default chain does (its internal
 * `memoizeChain`): callers wait for a fetch only when there are no
 * credentials yet or they have expired. In the last 5 minutes before expiry
 * callers get the cached credentials at once while one fetch runs in the
 * background; if it fails, the next call starts another. `forceRefresh`
 * callers share a fetch of their own and get its result or its error.
 * Concurrent callers share one fetch.
 */
export function cacheLikeTheSdk(fetch: AwsCredentialIdentityProvider): CachedProvider {
  let credentials: AwsCredentialIdentity | undefined;
  let background: Promise<void> | undefined;
  const store = (fetched: AwsCredentialIdentity) => {
    credentials = fetched;
    return fetched;
  };
  /** A fetch its concurrent callers share and wait for, storing what it gets. */
  const sharedFetch = () => {
    let pending: Promise<AwsCredentialIdentity> | undefined;
    return (options: Parameters<CachedProvider>[0]) => {
      pending ??= fetch(options)
        .then(store)
        .finally(() => {
          pending = undefined;
        });
      return pending;
    };
  };
  const forced = sharedFetch();
  const waited = sharedFetch();
  return async (options) => {
    if (options?.forceRefresh) return forced(options);
    const expiresAt = credentials?.expiration?.getTime();
    if (!credentials || (expiresAt !== undefined && expiresAt <= Date.now())) {
      return waited(options);
    }
    const expiring = expiresAt !== undefined && expiresAt - Date.now() < REFRESH_BEFORE_EXPIRY_MS;
    if (expiring && background === undefined) {
      background = fetch(options)
        .then(store, () => undefined)
        .then(() => {
          background = undefined;
        });
    }
    return credentials;
  };
}

export const defaultProvider: typeof sdkDefaultProvider = (init = {}) =>
  cacheLikeTheSdk(chain(fromEnv(init), fromContainer(init)));
