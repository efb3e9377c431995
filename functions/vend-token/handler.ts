import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KMSClient } from '@aws-sdk/client-kms';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { Context, LambdaFunctionURLEvent, LambdaFunctionURLResult } from 'aws-lambda';
import { SecretsManagerCredentials } from '../adapters/credentials.js';
import { DynamoDbTokenStore } from '../adapters/dynamodb-token-store.js';
import { metricsRecorder } from '../adapters/metrics.js';
import { KmsSealer } from '../adapters/sealers.js';
import { EnvReader, readVendSettings } from '../core/config.js';
import { createVendRuntime } from './runtime.js';

// Thin wiring: configuration is read and checked once at start; an invalid
// access policy or a missing variable stops the function with a clear message.
const env = new EnvReader(process.env);
const secretArn = env.required('CREDENTIALS_SECRET_ARN');
const kmsKeyId = env.required('KMS_KEY_ID');
const settings = readVendSettings(env);

const logger = new Logger({ serviceName: 'token-vending' });
const metrics = new Metrics({ namespace: 'TokenVending', serviceName: 'vend-token' });
const recorder = metricsRecorder(metrics);
// Short timeouts: a hung AWS call must not hold a vend; DynamoDB failures fall
// back to degraded mode, KMS and Secrets Manager ones to cached values.
const fast = { maxAttempts: 2, requestHandler: { requestTimeout: 1000, connectionTimeout: 500 } };
const store = new DynamoDbTokenStore(new DynamoDBClient(fast), settings.tableName);

const { app } = createVendRuntime({
  store,
  sealer: new KmsSealer(new KMSClient(fast), kmsKeyId),
  credentials: new SecretsManagerCredentials({
    client: new SecretsManagerClient({
      ...fast,
      requestHandler: { requestTimeout: 2000, connectionTimeout: 500 },
    }),
    secretId: secretArn,
    logger,
  }),
  provider: { baseUrl: settings.providerBaseUrl, unscopedScopeMode: settings.unscopedScopeMode },
  policy: settings.policy,
  tokenConfig: { refreshAheadSeconds: settings.refreshAheadSeconds },
  logger,
  count: recorder.count,
  recordVend: recorder.recordVend,
});

export const handler = async (
  event: LambdaFunctionURLEvent,
  context: Context,
): Promise<LambdaFunctionURLResult> => {
  logger.addContext(context);
  try {
    return await app(event);
  } finally {
    metrics.publishStoredMetrics();
  }
};
