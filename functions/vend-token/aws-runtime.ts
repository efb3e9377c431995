import type { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KMSClient } from '@aws-sdk/client-kms';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { boundedCalls, VEND_CALL_LIMITS } from '../adapters/aws-client-options.js';
import { SecretsManagerCredentials } from '../adapters/credentials.js';
import { DynamoDbTokenStore } from '../adapters/dynamodb-token-store.js';
import { createFunctionLogger } from '../adapters/function-logger.js';
import { metricsRecorder } from '../adapters/metrics.js';
import { policyProviderFor } from '../adapters/policy-provider.js';
import { KmsSealer } from '../adapters/sealers.js';
import { type Env, EnvReader, readVendSettings, type VendSettings } from '../core/config.js';
import type { PolicyProvider } from '../core/policy-source.js';
import { createVendRuntime, type VendRuntime } from './runtime.js';

export interface AwsRuntime {
  readonly runtime: VendRuntime;
  readonly store: DynamoDbTokenStore;
  readonly settings: VendSettings;
  /** The access policy (AppConfig, or the inline ACCESS_POLICY). */
  readonly policy: PolicyProvider;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

/**
 * One "Lambda instance" of the token cache wired to AWS from the environment,
 * shared by the vend and refresh functions. Configuration is read and checked
 * once; a missing or invalid variable (an inline access policy included)
 * throws a ConfigError naming every problem. A policy read from AppConfig is
 * checked when it loads: see PolicySource. `extra` reads further variables with the same reader,
 * so their problems are reported together.
 */
export function createAwsRuntime<T = undefined>(
  env: Env,
  serviceName: string,
  extra?: (reader: EnvReader) => T,
): AwsRuntime & { readonly extra: T } {
  const reader = new EnvReader(env);
  const secretArn = reader.required('CREDENTIALS_SECRET_ARN');
  const kmsKeyId = reader.required('KMS_KEY_ID');
  const more = extra?.(reader) as T;
  const settings = readVendSettings(reader);

  const logger = createFunctionLogger();
  const metrics = new Metrics({ namespace: 'TokenVending', serviceName });
  const recorder = metricsRecorder(metrics);
  // Short timeouts: a hung AWS call must not hold a vend; DynamoDB failures fall
  // back to degraded mode, KMS and Secrets Manager ones to cached values.
  const fast = boundedCalls(VEND_CALL_LIMITS);
  const store = new DynamoDbTokenStore(new DynamoDBClient(fast), settings.tableName);
  const policy = policyProviderFor(settings.policy, { logger, count: recorder.count });
  const runtime = createVendRuntime({
    store,
    sealer: new KmsSealer(new KMSClient(fast), kmsKeyId),
    credentials: new SecretsManagerCredentials({
      client: new SecretsManagerClient(boundedCalls({ requestTimeoutMs: 2000, maxAttempts: 2 })),
      secretId: secretArn,
      logger,
    }),
    provider: { baseUrl: settings.providerBaseUrl, unscopedScopeMode: settings.unscopedScopeMode },
    policy,
    tokenConfig: { refreshAheadSeconds: settings.refreshAheadSeconds },
    logger,
    count: recorder.count,
    recordVend: recorder.recordVend,
  });
  return { runtime, store, settings, policy, logger, metrics, extra: more };
}
