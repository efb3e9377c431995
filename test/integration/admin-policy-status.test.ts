/**
 * `{"action":"status"}` on the admin function, through its Lambda handler wired
 * from the environment the stack gives it: the access policy it shows is the
 * version in force (AppConfig's version label when the deployed version has
 * one, else the document's digest), the digest `tvm policy validate` prints,
 * and when the function loaded it, for AppConfig and for an inline policy
 * alike. DynamoDB Local holds the table; AppConfig is a stand-in on loopback.
 */
import type { Context } from 'aws-lambda';
import {
  afterAll,
  afterEach,
  beforeAll,
  beforeEach,
  describe,
  expect,
  inject,
  it,
  vi,
} from 'vitest';
import type { StatusReport } from '../../functions/admin/status.js';
import { documentDigest } from '../../functions/core/policy-source.js';
import { type AppConfigDataFake, startAppConfigDataFake } from '../support/appconfig-data-fake.js';
import { createTestTable, dynamoClient } from '../support/dynamodb.js';

const DOCUMENT = JSON.stringify({
  scopes: ['ba_1', 'ba_2'],
  grants: [{ principal: 'arn:aws:iam::111122223333:role/checkout', scopes: ['ba_1'] }],
  keyIssuing: { businessApplicationIds: ['ba_2'] },
});
const context = { functionName: 'admin', awsRequestId: 'r1' } as unknown as Context;
const saved = { ...process.env };
let fake: AppConfigDataFake;
let table: string;

beforeAll(async () => {
  fake = await startAppConfigDataFake();
  const client = dynamoClient();
  table = await createTestTable(client);
  client.destroy();
});
afterAll(async () => fake.close());

beforeEach(() => {
  vi.resetModules();
  Object.assign(process.env, {
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_ENDPOINT_URL_DYNAMODB: inject('dynamodbEndpoint'),
    AWS_ENDPOINT_URL_APPCONFIGDATA: fake.url,
    POWERTOOLS_LOG_LEVEL: 'SILENT',
    POWERTOOLS_METRICS_DISABLED: 'true',
    TABLE_NAME: table,
    REFRESH_FUNCTION_NAME: 'token-vending-test-refresh:live',
    ISSUE_KEYS_FUNCTION_NAME: 'token-vending-test-issue-keys:live',
  });
});
afterEach(() => {
  process.env = { ...saved };
});

/** A cold admin function with `env`: its status answer, and the time around it (epoch s). */
async function status(env: Record<string, string>) {
  Object.assign(process.env, env);
  const before = Math.floor(Date.now() / 1000);
  const { handler } = await import('../../functions/admin/handler.js');
  const report = (await handler({ action: 'status' }, context)) as StatusReport;
  return { policy: report.policy, before, after: Math.ceil(Date.now() / 1000) };
}

const APPCONFIG = {
  POLICY_APPCONFIG_APPLICATION: 'token-vending-test',
  POLICY_APPCONFIG_ENVIRONMENT: 'test',
  POLICY_APPCONFIG_PROFILE: 'access-policy',
};

describe('admin status: the access policy in force', () => {
  it("shows AppConfig's version label, the document's digest, and when it was loaded", async () => {
    fake.deploy(DOCUMENT, 'onboard-ba_2');

    const { policy, before, after } = await status(APPCONFIG);

    expect(policy).toEqual({
      version: 'onboard-ba_2',
      digest: documentDigest(DOCUMENT),
      loaded_at: expect.any(Number),
      scopes: 2,
      principals: 1,
      key_issuing_ids: 1,
    });
    expect(policy.loaded_at).toBeGreaterThanOrEqual(before);
    expect(policy.loaded_at).toBeLessThanOrEqual(after);
  });

  it('shows the digest as the version of an AppConfig version without a label', async () => {
    fake.deploy(DOCUMENT);

    const { policy } = await status(APPCONFIG);

    expect(policy).toMatchObject({
      version: documentDigest(DOCUMENT),
      digest: documentDigest(DOCUMENT),
      loaded_at: expect.any(Number),
    });
  });

  it('shows the digest of an inline ACCESS_POLICY, and when the function read it', async () => {
    const { policy, before, after } = await status({ ACCESS_POLICY: DOCUMENT });

    expect(policy).toEqual({
      version: documentDigest(DOCUMENT),
      digest: documentDigest(DOCUMENT),
      loaded_at: expect.any(Number),
      scopes: 2,
      principals: 1,
      key_issuing_ids: 1,
    });
    expect(policy.loaded_at).toBeGreaterThanOrEqual(before);
    expect(policy.loaded_at).toBeLessThanOrEqual(after);
  });
});
