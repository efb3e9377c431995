import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KMSClient } from '@aws-sdk/client-kms';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { Context } from 'aws-lambda';
import {
  DEFAULT_RETRY_BUDGET_MS,
  DEFAULT_TIMEOUT_MS,
  TokenVendingClient,
} from '../../client/index.js';
import { boundedCalls } from '../adapters/aws-client-options.js';
import { DynamoDbKeyJobStore } from '../adapters/dynamodb-key-job-store.js';
import { createFunctionLogger } from '../adapters/function-logger.js';
import { KmsEnvelopeSealer } from '../adapters/kms-envelope-sealer.js';
import { policyProviderFor } from '../adapters/policy-provider.js';
import {
  SecretsManagerKeyVault,
  secretsPrefixProblem,
} from '../adapters/secrets-manager-key-vault.js';
import { EnvReader, type PolicySettings } from '../core/config.js';
import type { ClearPendingKeyResult } from './clear-pending-key.js';
import { readKeyIssuingSettings } from './config.js';
import type { KeyIssuingResult } from './errors.js';
import { isClearPendingKeyEvent } from './event.js';
import { createKeyIssuingJob, idStartDeadline } from './job.js';
import { longestKeysRequestMs } from './keys-request.js';

// Thin wiring: configuration is read and checked once at start; a missing or
// invalid variable stops the function with one message naming every problem.
const env = new EnvReader(process.env);
const tableName = env.required('TABLE_NAME');
const kmsKeyId = env.required('KMS_KEY_ID');
const secretsPrefix = env.required('SECRETS_PREFIX');
const settings = readKeyIssuingSettings(env);
// The ids a scheduled run covers come from the access policy document
// (AppConfig), so onboarding a business application needs no deploy;
// KEY_ISSUE_BUSINESS_APPLICATION_IDS is the fallback for a document without them.
const policySettings = env.policySettings();
const prefixProblem = secretsPrefix === '' ? undefined : secretsPrefixProblem(secretsPrefix);
if (prefixProblem) env.problem(`SECRETS_PREFIX: ${prefixProblem}`);
env.done();

const logger = createFunctionLogger();
const metrics = new Metrics({ namespace: 'TokenVending', serviceName: 'issue-keys' });
const count = (metric: string) => metrics.addMetric(metric, MetricUnit.Count, 1);
const policy = policyProviderFor(policySettings as PolicySettings, { logger, count });
// A hung AWS call must not hold the run until the Lambda timeout.
const aws = boundedCalls({ requestTimeoutMs: 5000, connectionTimeoutMs: 1000 });

const job = createKeyIssuingJob(
  {
    store: new DynamoDbKeyJobStore(new DynamoDBClient(aws), tableName),
    vault: new SecretsManagerKeyVault({
      client: new SecretsManagerClient(aws),
      prefix: secretsPrefix,
    }),
    // Envelope sealing: a key-issuing answer can exceed KMS Encrypt's 4 KiB.
    sealer: new KmsEnvelopeSealer(new KMSClient(aws), kmsKeyId),
    // Signs with the function's role (the SDK's default chain), which the access
    // policy grants `unscoped`.
    tokens: new TokenVendingClient({ url: settings.vendUrl }),
    logger,
    count,
  },
  {
    providerBaseUrl: settings.providerBaseUrl,
    businessApplicationIds: async () =>
      (await policy.current()).policy.keyIssuingIds ?? settings.businessApplicationIds,
    ...(settings.requestBody === undefined ? {} : { requestBody: settings.requestBody }),
  },
);

/** The longest one id can take, with the client library's default timeout and retry budget. */
const LONGEST_ID_MS = longestKeysRequestMs(Math.max(DEFAULT_TIMEOUT_MS, DEFAULT_RETRY_BUDGET_MS));

/**
 * Event: `{}` (the schedule: every configured id) or
 * `{"businessApplicationIds": [...], "force": true}`. Returns
 * `{issued, skipped, failed}`; throws KeyIssuingFailedError (message naming each
 * failed id and code) after every id was processed when any failed, and
 * InvalidKeyIssuingRequestError for a bad event.
 *
 * `{"action":"clear-pending-key","businessApplicationId","reason"}` (the admin
 * forwards it: only this function writes `KEYS#` items) drops a key job's
 * pending Idempotency-Key; PendingKeyNotClearedError when it may not.
 */
export const handler = async (
  event: unknown,
  context: Context,
): Promise<KeyIssuingResult | ClearPendingKeyResult> => {
  logger.addContext(context);
  const deadlineMs = idStartDeadline(Date.now(), context.getRemainingTimeInMillis(), LONGEST_ID_MS);
  try {
    if (isClearPendingKeyEvent(event)) return await job.clearPendingKey(event);
    // The request id is a forced event's identity: Lambda's retries carry the same one (job.ts).
    return await job.handle(event, { deadlineMs, requestId: context.awsRequestId });
  } finally {
    metrics.publishStoredMetrics();
  }
};
