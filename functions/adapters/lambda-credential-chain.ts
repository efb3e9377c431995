/**
 * The AWS SDK's default credential chain cut to the two sources a Lambda
 * function has: the variables the runtime sets (`AWS_ACCESS_KEY_ID`,
 * `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), then the container
 * credentials endpoint (`AWS_CONTAINER_CREDENTIALS_FULL_URI` or
 * `_RELATIVE_URI`), which Lambda uses where credentials must be refreshed
 * without a restart.
 *
 * Every Lambda bundle imports this module in place of
 * `@aws-sdk/credential-provider-node` (infra/lambda-bundling.ts); tests and the
 * local stack run the SDK's own chain. The full chain (profiles, SSO, login,
 * credential processes, web identity, EC2 instance metadata) and the nested
 * SDK clients it loads are about 135 KB that every cold start parsed and no
 * Lambda function ever ran.
 *
 * Same export and contract as that package: `defaultProvider(init)` returns a
 * memoized provider that fetches again 5 minutes before credentials expire.
 */
import { fromEnv } from '@aws-sdk/credential-provider-env';
import { fromHttp } from '@aws-sdk/credential-provider-http';
import {
  doesIdentityRequireRefresh,
  isIdentityExpired,
  memoizeIdentityProvider,
} from '@smithy/core';
import { CredentialsProviderError, chain } from '@smithy/core/config';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';

type ChainInit = NonNullable<Parameters<typeof fromEnv>[0]> & Parameters<typeof fromHttp>[0];

const CONTAINER_URI_VARIABLES = [
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
] as const;

export const NO_LAMBDA_CREDENTIALS =
  'No AWS credentials: neither AWS_ACCESS_KEY_ID with AWS_SECRET_ACCESS_KEY nor ' +
  'AWS_CONTAINER_CREDENTIALS_FULL_URI or _RELATIVE_URI is set. Lambda bundles read only ' +
  'the credentials the Lambda runtime provides.';

function fromContainer(init: ChainInit): AwsCredentialIdentityProvider {
  return async (properties) => {
    if (!CONTAINER_URI_VARIABLES.some((name) => process.env[name])) {
      throw new CredentialsProviderError(NO_LAMBDA_CREDENTIALS, {
        tryNextLink: false,
        ...(init.logger ? { logger: init.logger } : {}),
      });
    }
    return fromHttp(init)(properties);
  };
}

export const defaultProvider = (init: ChainInit = {}): AwsCredentialIdentityProvider => {
  const provider = memoizeIdentityProvider<AwsCredentialIdentity>(
    chain(fromEnv(init), fromContainer(init)),
    isIdentityExpired,
    doesIdentityRequireRefresh,
  );
  // memoizeIdentityProvider returns undefined only when given undefined.
  if (provider === undefined) throw new Error('unreachable: no credential provider to memoize');
  return provider;
};
