/**
 * The real issue-keys Lambda entry point, wired from the environment: DynamoDB
 * Local for the job records, the simulator as provider, the vend runtime behind
 * the local Function URL (the handler's client signs with the environment's
 * AWS keys, as the function's role would), the access policy document (with
 * the ids a scheduled run covers) from a stand-in of AppConfig's data API,
 * mocks only for Secrets Manager and KMS.
 */

import { DecryptCommand, GenerateDataKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { Context } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, beforeAll, beforeEach, expect, inject, it, vi } from 'vitest';
import { DynamoDbKeyJobIndex } from '../../functions/adapters/dynamodb-key-job-index.js';
import type {
  InvalidKeyIssuingRequestError,
  KeyIssuingFailedError,
  KeyIssuingResult,
} from '../../functions/issue-keys/errors.js';
import { type LocalFunctionUrl, startLocalFunctionUrl } from '../../local/function-url.js';
import { type ProviderSimulator, startProviderSimulator } from '../../local/provider-simulator.js';
import { type AppConfigDataFake, startAppConfigDataFake } from '../support/appconfig-data-fake.js';
import { TestClock } from '../support/clock.js';
import { createTestTable, dynamoClient } from '../support/dynamodb.js';
import { fakeKms } from '../support/fake-kms.js';
import { FakeSecretsManager, KEY_ISSUER } from '../support/key-job-harness.js';
import { makeInstance } from '../support/vend-harness.js';

const sm = mockClient(SecretsManagerClient);
const kms = mockClient(KMSClient);
let secrets: FakeSecretsManager;
let sim: ProviderSimulator;
let url: LocalFunctionUrl;
let table: string;
let appConfig: AppConfigDataFake;
const saved = { ...process.env };
const context = {
  functionName: 'issue-keys',
  awsRequestId: 'r1',
  getRemainingTimeInMillis: () => 300_000,
} as unknown as Context;

beforeAll(async () => {
  sim = await startProviderSimulator();
  appConfig = await startAppConfigDataFake();
  const client = dynamoClient();
  table = await createTestTable(client);
  const vend = makeInstance({ sim, clock: new TestClock(), client, table });
  url = await startLocalFunctionUrl({ handler: vend.app, identities: [KEY_ISSUER] });
});
afterAll(async () => {
  await url.close();
  await sim.close();
  await appConfig.close();
});

beforeEach(() => {
  vi.resetModules();
  sm.reset();
  kms.reset();
  secrets = new FakeSecretsManager(sm);
  fakeKms(kms);
  for (const name of ['AWS_SESSION_TOKEN', 'AWS_PROFILE', 'KEY_ISSUE_REQUEST_BODY']) {
    delete process.env[name];
  }
  Object.assign(process.env, {
    AWS_REGION: 'us-east-1',
    // The job's role: the local URL knows these keys as the key-issuer identity.
    AWS_ACCESS_KEY_ID: KEY_ISSUER.accessKeyId,
    AWS_SECRET_ACCESS_KEY: KEY_ISSUER.secretAccessKey,
    AWS_ENDPOINT_URL_DYNAMODB: inject('dynamodbEndpoint'),
    POWERTOOLS_LOG_LEVEL: 'SILENT',
    POWERTOOLS_METRICS_DISABLED: 'true',
    TABLE_NAME: table,
    KMS_KEY_ID: 'alias/token-vending',
    PROVIDER_BASE_URL: sim.url,
    VEND_URL: url.url,
    SECRETS_PREFIX: 'token-vending',
    POLICY_APPCONFIG_APPLICATION: 'token-vending-test',
    POLICY_APPCONFIG_ENVIRONMENT: 'test',
    POLICY_APPCONFIG_PROFILE: 'access-policy',
    AWS_ENDPOINT_URL_APPCONFIGDATA: appConfig.url,
  });
  appConfig.deploy(
    JSON.stringify({
      scopes: ['ba_demo_1', 'ba_demo_2'],
      grants: [],
      keyIssuing: { businessApplicationIds: ['ba_demo_1', 'ba_demo_2'] },
    }),
  );
});
afterEach(() => {
  process.env = { ...saved };
});

it("a scheduled run issues the access policy document's ids, sealing with a KMS data key under the record key", async () => {
  // Prepare
  const { handler } = await import('../../functions/issue-keys/handler.js');

  // Act
  const result = await handler({}, context);
  const again = await handler({}, context);

  // Assess
  expect(result).toEqual({ issued: ['ba_demo_1', 'ba_demo_2'], skipped: [], failed: [] });
  expect(again).toEqual({ issued: [], skipped: ['ba_demo_1', 'ba_demo_2'], failed: [] });
  expect(sm.commandCalls(CreateSecretCommand).map((c) => c.args[0].input.Name)).toEqual([
    'token-vending/basic-auth/ba_demo_1',
    'token-vending/basic-auth/ba_demo_2',
  ]);
  expect(kms.commandCalls(GenerateDataKeyCommand)[0]?.args[0].input).toMatchObject({
    KeyId: 'alias/token-vending',
    EncryptionContext: { pk: 'KEYS#ba_demo_1' },
  });
  const client = dynamoClient();
  const records = await new DynamoDbKeyJobIndex(client, table).list();
  client.destroy();
  expect(records.map((r) => [r.businessApplicationId, r.state]).sort()).toEqual([
    ['ba_demo_1', 'stored'],
    ['ba_demo_2', 'stored'],
  ]);
});

it('a Secrets Manager outage: the next invocation stores the KMS-sealed copy, no provider call', async () => {
  // Prepare
  const { handler } = await import('../../functions/issue-keys/handler.js');
  const event = { businessApplicationIds: ['ba_demo_1'], force: true };
  secrets.failures = 1;
  const before = sim.stats.keyRequests;

  // Act
  const first = await handler(event, context).catch((e: unknown) => e);
  const second = await handler({ businessApplicationIds: ['ba_demo_1'] }, context);

  // Assess
  // vi.resetModules gives the handler its own copy of the error classes: match by name.
  expect(first).toMatchObject({ name: 'KeyIssuingFailedError' });
  expect((first as KeyIssuingFailedError).result.failed).toEqual([
    { id: 'ba_demo_1', code: 'store_failed' },
  ]);
  expect(second).toMatchObject({ issued: ['ba_demo_1'] });
  expect(sim.stats.keyRequests - before).toBe(1);
  expect(kms.commandCalls(DecryptCommand)[0]?.args[0].input.EncryptionContext).toEqual({
    pk: 'KEYS#ba_demo_1',
  });
});

it("Lambda's retries of a failed forced invocation (same request id) reissue each id once", async () => {
  // Prepare: stored keys; an async invocation that fails for ba_missing, so Lambda retries it twice.
  const { handler } = await import('../../functions/issue-keys/handler.js');
  await handler({ businessApplicationIds: ['ba_demo_2'] }, context);
  const event = { businessApplicationIds: ['ba_demo_2', 'ba_missing'], force: true };
  const invocation = { ...context, awsRequestId: 'async-invocation-1' } as Context;
  const before = sim.stats.keysIssued;

  // Act
  const results: unknown[] = [];
  for (let i = 0; i < 3; i++) {
    const error = await handler(event, invocation).catch((e: unknown) => e);
    results.push((error as KeyIssuingFailedError).result);
  }

  // Assess
  expect(sim.stats.keysIssued - before).toBe(1);
  expect(results.map((r) => (r as { issued: string[] }).issued)).toEqual([['ba_demo_2'], [], []]);
});

it('takes clear-pending-key from the admin: refused with its code while nothing is pending', async () => {
  // Prepare
  const { handler } = await import('../../functions/issue-keys/handler.js');
  const event = { action: 'clear-pending-key', businessApplicationId: 'ba_demo_1', reason: 'ok' };

  // Act
  const refused = await handler(event, context).catch((e: unknown) => e);
  const invalid = await handler({ ...event, reason: '' }, context).catch((e: unknown) => e);

  // Assess: the message starts with the code, which the admin's invoker reads.
  expect(refused).toMatchObject({ name: 'PendingKeyNotClearedError', code: 'no_pending_key' });
  expect((refused as Error).message).toMatch(/^no_pending_key: /);
  expect(invalid).toMatchObject({ name: 'InvalidKeyIssuingRequestError', code: 'invalid_request' });
});

it('fails the invocation after all ids, naming each failed id and code', async () => {
  // Prepare
  const { handler } = await import('../../functions/issue-keys/handler.js');

  // Act
  const error = await handler(
    { businessApplicationIds: ['ba_missing', 'ba_demo_2'], force: true },
    context,
  ).catch((e: unknown) => e);

  // Assess
  expect(error).toMatchObject({
    name: 'KeyIssuingFailedError' satisfies KeyIssuingFailedError['name'],
    code: 'key_issuing_failed',
    message:
      'key_issuing_failed: 1 of 2 business applications failed: ba_missing (business_application_not_found)',
    result: { issued: ['ba_demo_2'] },
  });
});

it('answers a bad event with invalid_request', async () => {
  // Prepare
  const { handler } = await import('../../functions/issue-keys/handler.js');

  // Act
  const error = await handler({ key1: 'value1' }, context).catch((e: unknown) => e);

  // Assess
  expect(error).toMatchObject({
    name: 'InvalidKeyIssuingRequestError' satisfies InvalidKeyIssuingRequestError['name'],
    code: 'invalid_request',
  });
  expect((error as Error).message).toContain('unknown field "key1"');
});

it('takes an id onboarded in a new policy version on its next run, without a deploy', async () => {
  // Prepare: one run over a version that lists one id
  appConfig.deploy(
    JSON.stringify({
      scopes: [],
      grants: [],
      keyIssuing: { businessApplicationIds: ['ba_demo_1'] },
    }),
  );
  const { handler } = await import('../../functions/issue-keys/handler.js');
  const first = (await handler({}, context)) as KeyIssuingResult;
  appConfig.deploy(
    JSON.stringify({
      scopes: [],
      grants: [],
      keyIssuing: { businessApplicationIds: ['ba_demo_1', 'ba_demo_2'] },
    }),
  );

  // Act: a later run (a new instance reads the new version at once)
  vi.resetModules();
  const next = await import('../../functions/issue-keys/handler.js');
  const result = (await next.handler({}, context)) as KeyIssuingResult;

  // Assess: each run covers the ids of the version in force (issued now, or stored before)
  const covered = (r: typeof first) => [...r.issued, ...r.skipped].sort();
  expect(covered(first)).toEqual(['ba_demo_1']);
  expect(covered(result)).toEqual(['ba_demo_1', 'ba_demo_2']);
  expect(result.failed).toEqual([]);
});

it('regression: a scheduled run that cannot load the access policy fails policy_unavailable, without a stack trace', async () => {
  // Prepare: a cold start while AppConfig is out of reach
  appConfig.fail(100);
  const { handler } = await import('../../functions/issue-keys/handler.js');

  // Act
  const error = await handler({}, context).catch((e: unknown) => e);
  const named = await handler({ businessApplicationIds: ['ba_demo_1'] }, context);

  // Assess: the code first (the admin's invoker reads it), the stack only the message.
  expect(error).toMatchObject({
    name: 'ConfiguredIdsUnavailableError',
    code: 'policy_unavailable',
  });
  expect((error as Error).message).toMatch(/^policy_unavailable: .*nothing was issued/);
  expect((error as Error).stack).toBe(`ConfiguredIdsUnavailableError: ${(error as Error).message}`);
  // A run naming its ids needs no policy (issued now, or stored by an earlier test).
  const { issued, skipped, failed } = named as KeyIssuingResult;
  expect({ covered: [...issued, ...skipped], failed }).toEqual({
    covered: ['ba_demo_1'],
    failed: [],
  });
});

it('regression: clear-pending-key with the job table unreachable answers job_store_unavailable, without a stack trace', async () => {
  // Prepare
  process.env.TABLE_NAME = 'no-such-table';
  const { handler } = await import('../../functions/issue-keys/handler.js');
  const event = { action: 'clear-pending-key', businessApplicationId: 'ba_demo_1', reason: 'ok' };

  // Act
  const error = await handler(event, context).catch((e: unknown) => e);

  // Assess: the code first, as the admin's invoker reads it.
  expect(error).toMatchObject({ name: 'KeyJobStoreError', code: 'job_store_unavailable' });
  expect((error as Error).message).toBe(
    'job_store_unavailable: DynamoDB GetItem failed (ResourceNotFoundException)',
  );
  expect((error as Error).stack).toBe(`KeyJobStoreError: ${(error as Error).message}`);
});

it('names every configuration problem at start', async () => {
  // Prepare
  delete process.env.VEND_URL;
  delete process.env.SECRETS_PREFIX;
  process.env.KEY_ISSUE_BUSINESS_APPLICATION_IDS = '["ba_demo_1", "not valid"]';
  process.env.KEY_ISSUE_REQUEST_BODY = '{"label":';
  process.env.PROVIDER_BASE_URL = 'http://provider.example';

  // Act
  const loading = import('../../functions/issue-keys/handler.js');

  // Assess
  await expect(loading).rejects.toThrow(
    /SECRETS_PREFIX is required.*PROVIDER_BASE_URL must be an https: URL.*VEND_URL is required.*KEY_ISSUE_BUSINESS_APPLICATION_IDS entry 2.*KEY_ISSUE_REQUEST_BODY is not valid JSON/,
  );
});
