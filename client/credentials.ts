import { fromNodeProviderChain } from '@aws-sdk/credential-providers';
import type { AwsCredentialsProvider } from './types.js';

/**
 * The AWS SDK's default credential chain (`fromNodeProviderChain`: environment,
 * SSO, web identity, shared profile, ECS and EC2 metadata), so the client works
 * unchanged in Lambda, ECS, EC2 and with a named profile. The chain caches what
 * it resolves and refreshes it before it expires. A static import, so that
 * bundlers keep only the chain out of `@aws-sdk/credential-providers`.
 */
export function defaultCredentials(): AwsCredentialsProvider {
  return fromNodeProviderChain();
}
