import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LambdaClient } from '@aws-sdk/client-lambda';
import type { Context } from 'aws-lambda';
import { boundedCalls } from '../adapters/aws-client-options.js';
import { DynamoDbKeyJobIndex } from '../adapters/dynamodb-key-job-index.js';
import { DynamoDbTokenStore } from '../adapters/dynamodb-token-store.js';
import { createFunctionLogger } from '../adapters/function-logger.js';
import { LambdaInvoker } from '../adapters/lambda-invoker.js';
import { policyProviderFor } from '../adapters/policy-provider.js';
import { systemClock } from '../core/clock.js';
import { EnvReader, type PolicySettings } from '../core/config.js';
import type { ClearPendingKeyResult } from '../issue-keys/clear-pending-key.js';
import type { KeyIssuingResult } from '../issue-keys/errors.js';
import { type AdminResult, createAdmin, type RefreshOutcome } from './admin.js';

// Thin wiring. The admin role lists token items and key-job summaries (two
// table indexes), deletes token items and invokes the refresh and issue-keys functions; it never reads the provider secret or
// writes key secrets itself (those stay with the functions that need them).
const env = new EnvReader(process.env);
const tableName = env.required('TABLE_NAME');
const policySettings = env.policySettings();
const refreshFunction = env.required('REFRESH_FUNCTION_NAME');
const issueKeysFunction = env.required('ISSUE_KEYS_FUNCTION_NAME');
const inUseWindowSeconds = env.integer('IN_USE_WINDOW_SECONDS', 3600, 300, 86_400);
env.done();

const logger = createFunctionLogger();
const metrics = new Metrics({ namespace: 'TokenVending', serviceName: 'admin' });
const count = (metric: string) => metrics.addMetric(metric, MetricUnit.Count, 1);
// A DynamoDB that stops answering fails the action as store_unavailable in
// seconds, not at the admin's 11-minute timeout (the SDK's default socket
// timeout for DynamoDB is 300 s per attempt). Lambda invocations stay
// unbounded here: they are synchronous and last as long as the function
// invoked, whose own timeout (refresh 4 min, issue-keys 10 min) ends them.
const dynamodb = new DynamoDBClient(
  boundedCalls({ requestTimeoutMs: 3000, connectionTimeoutMs: 1000, maxAttempts: 2 }),
);
const invoker = new LambdaInvoker(new LambdaClient({}));

const admin = createAdmin({
  store: new DynamoDbTokenStore(dynamodb, tableName),
  jobs: new DynamoDbKeyJobIndex(dynamodb, tableName),
  refresh: (scope) =>
    invoker.invoke<RefreshOutcome>(refreshFunction, {
      action: 'refresh',
      scope: scope ?? 'unscoped',
    }),
  issueKeys: (event) => invoker.invoke<KeyIssuingResult>(issueKeysFunction, event),
  policy: policyProviderFor(policySettings as PolicySettings, { logger, count }),
  clearPendingKey: (request) =>
    invoker.invoke<ClearPendingKeyResult>(issueKeysFunction, {
      action: 'clear-pending-key',
      ...request,
    }),
  inUseWindowSeconds,
  clock: systemClock,
  logger,
  count,
});

/** Console test events and `tvm admin --function`: see docs/operations.md. */
export const handler = async (event: unknown, context: Context): Promise<AdminResult> => {
  logger.addContext(context);
  try {
    return await admin(event, { requestId: context.awsRequestId });
  } finally {
    // Most admin events count nothing: publish only what was counted.
    if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
  }
};
