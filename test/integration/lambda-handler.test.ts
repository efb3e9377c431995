import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DeleteItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import {
  DecryptCommand,
  EncryptCommand,
  KMSClient,
  KMSServiceException,
} from '@aws-sdk/client-kms';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { Context } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
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
import { AesGcmSealer } from '../../functions/adapters/sealers.js';
import {
  DEMO_PROVIDER_CREDENTIALS,
  type ProviderSimulator,
  startProviderSimulator,
} from '../../local/provider-simulator.js';
import { createTestTable, dynamoClient } from '../support/dynamodb.js';
import { CALLER_ARN, urlEvent } from '../support/vend-harness.js';

// The real Lambda entry point, wired from the environment: DynamoDB Local for
// the table, the simulator as provider, mocks only for Secrets Manager and KMS.
const sm = mockClient(SecretsManagerClient);
const kms = mockClient(KMSClient);
const kmsKey = new AesGcmSealer();
let sim: ProviderSimulator;
let table: string;
const saved = { ...process.env };

const policy = JSON.stringify({
  scopes: ['ba_demo_1'],
  grants: [{ principal: 'arn:aws:iam::111122223333:role/checkout', scopes: ['ba_demo_1'] }],
});

beforeAll(async () => {
  sim = await startProviderSimulator();
  const client = dynamoClient();
  table = await createTestTable(client);
  client.destroy();
});
afterAll(async () => sim.close());

beforeEach(() => {
  vi.resetModules();
  sm.reset();
  kms.reset();
  sm.on(GetSecretValueCommand).resolves({
    SecretString: JSON.stringify(DEMO_PROVIDER_CREDENTIALS),
    VersionId: 'version-1',
  });
  kms.on(EncryptCommand).callsFake(async (input) => ({
    CiphertextBlob: await kmsKey.seal(
      Buffer.from(input.Plaintext).toString('utf8'),
      input.EncryptionContext.pk,
    ),
  }));
  kms.on(DecryptCommand).callsFake(async (input) => ({
    Plaintext: Buffer.from(await kmsKey.unseal(input.CiphertextBlob, input.EncryptionContext.pk)),
  }));
  Object.assign(process.env, {
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_ENDPOINT_URL_DYNAMODB: inject('dynamodbEndpoint'),
    POWERTOOLS_LOG_LEVEL: 'SILENT',
    POWERTOOLS_METRICS_DISABLED: 'true',
    TABLE_NAME: table,
    CREDENTIALS_SECRET_ARN: 'arn:aws:secretsmanager:us-east-1:111122223333:secret:provider',
    KMS_KEY_ID: 'alias/token-vending',
    PROVIDER_BASE_URL: sim.url,
    ACCESS_POLICY: policy,
  });
});
afterEach(() => {
  process.env = { ...saved };
});

const context = {
  functionName: 'vend-token',
  awsRequestId: 'r1',
  getRemainingTimeInMillis: () => 240_000,
} as unknown as Context;

/**
 * Runs `act` with DynamoDB's endpoint pointed at a server that accepts
 * connections and never answers; closes it after.
 */
async function withHungDynamoDb<T>(act: () => Promise<T>): Promise<T> {
  const hung = createServer((request) => request.resume());
  await new Promise<void>((ready) => hung.listen(0, '127.0.0.1', ready));
  const { port } = hung.address() as AddressInfo;
  process.env.AWS_ENDPOINT_URL_DYNAMODB = `http://127.0.0.1:${port}`;
  try {
    return await act();
  } finally {
    hung.closeAllConnections();
    hung.close();
  }
}

describe('vend-token Lambda handler', () => {
  it('serves a token, sealing it with KMS under the item key as encryption context', async () => {
    const { handler } = await import('../../functions/vend-token/handler.js');

    const result = await handler(urlEvent({ query: 'scope=ba_demo_1', arn: CALLER_ARN }), context);

    expect(typeof result === 'object' && result.statusCode).toBe(200);
    expect(kms.commandCalls(EncryptCommand)[0]?.args[0].input).toMatchObject({
      KeyId: 'alias/token-vending',
      EncryptionContext: { pk: 'TOKEN#ba_demo_1' },
    });
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(1);
  });

  describe('Secrets Manager unreachable at a cold start', () => {
    const unreachable = () => {
      sm.reset();
      sm.on(GetSecretValueCommand).rejects(
        Object.assign(new Error('connect ETIMEDOUT'), { name: 'TimeoutError' }),
      );
    };

    it('serves the still-valid token DynamoDB holds, never a 500', async () => {
      // Prepare: a warm instance cached a token; then a new instance starts while SM is down
      const warm = await import('../../functions/vend-token/handler.js');
      const first = await warm.handler(urlEvent({ query: 'scope=ba_demo_1' }), context);
      vi.resetModules();
      unreachable();
      const cold = await import('../../functions/vend-token/handler.js');

      // Act
      const result = await cold.handler(urlEvent({ query: 'scope=ba_demo_1' }), context);

      // Assess
      expect(typeof result === 'object' && result.statusCode).toBe(200);
      expect(typeof result === 'object' && JSON.parse(result.body ?? '{}').access_token).toBe(
        typeof first === 'object' && JSON.parse(first.body ?? '{}').access_token,
      );
    });

    it('treats a secret whose content is unusable (a broken rotation) the same way: 503, not 500', async () => {
      const client = dynamoClient();
      process.env.TABLE_NAME = await createTestTable(client);
      client.destroy();
      sm.reset();
      sm.on(GetSecretValueCommand).resolves({ SecretString: '{"key":', VersionId: 'version-2' });
      const { handler } = await import('../../functions/vend-token/handler.js');

      const result = await handler(urlEvent({ query: 'scope=ba_demo_1' }), context);

      const answer = result as { statusCode: number; body: string };
      expect(answer.statusCode).toBe(503);
      expect(JSON.parse(answer.body).code).toBe('upstream_unavailable');
    });

    it('answers 503 upstream_unavailable with Retry-After when nothing is servable', async () => {
      // Prepare: an empty table
      const client = dynamoClient();
      process.env.TABLE_NAME = await createTestTable(client);
      client.destroy();
      unreachable();
      const { handler } = await import('../../functions/vend-token/handler.js');
      const requestsBefore = sim.stats.tokenRequests;

      // Act
      const result = await handler(urlEvent({ query: 'scope=ba_demo_1' }), context);

      // Assess
      const answer = result as {
        statusCode: number;
        headers: Record<string, string>;
        body: string;
      };
      expect(answer.statusCode).toBe(503);
      expect(JSON.parse(answer.body).code).toBe('upstream_unavailable');
      expect(answer.headers['retry-after']).toMatch(/^[1-9]\d*$/);
      expect(sim.stats.tokenRequests).toBe(requestsBefore);
    });
  });

  it('serves degraded when DynamoDB accepts connections and never answers: each call ends at its timeout', async () => {
    // Regression (review): the SDK's requestTimeout only logged a warning
    // (throwOnRequestTimeout was not set), so a hung DynamoDB hung every vend
    // until the Lambda timeout instead of turning into degraded service.
    const result = await withHungDynamoDb(async () => {
      const { handler } = await import('../../functions/vend-token/handler.js');
      return handler(urlEvent({ query: 'scope=ba_demo_1' }), context);
    });

    const answer = result as { statusCode: number; body: string };
    expect(answer.statusCode).toBe(200);
    expect(JSON.parse(answer.body).access_token).toEqual(expect.any(String));
  }, 15_000);

  it('refuses to start with an access policy naming an unlisted scope', async () => {
    process.env.ACCESS_POLICY = JSON.stringify({
      scopes: ['ba_demo_1'],
      grants: [{ principal: 'arn:aws:iam::111122223333:role/checkout', scopes: ['ba_other'] }],
    });

    await expect(import('../../functions/vend-token/handler.js')).rejects.toThrow(
      /ACCESS_POLICY is invalid: grants\.0\.scopes: "ba_other" is not listed in scopes/,
    );
  });

  it('names every missing variable at start', async () => {
    delete process.env.TABLE_NAME;
    delete process.env.KMS_KEY_ID;

    await expect(import('../../functions/vend-token/handler.js')).rejects.toThrow(
      /KMS_KEY_ID is required.*TABLE_NAME is required/,
    );
  });
});

/**
 * Runs `act` with the unscoped token in use (vended a minute ago) and no
 * longer cached, so a scheduled run must refresh it; removes the item after.
 */
async function withUnscopedDue<T>(act: () => Promise<T>): Promise<T> {
  const client = dynamoClient();
  const key = { pk: { S: 'TOKEN#~unscoped' } };
  const lastUsedAt = Math.floor(Date.now() / 1000) - 60;
  await client.send(
    new PutItemCommand({
      TableName: table,
      // As the store writes an item: token_pk puts it in the index the refresh lists.
      Item: { ...key, token_pk: key.pk, last_used_at: { N: String(lastUsedAt) } },
    }),
  );
  try {
    return await act();
  } finally {
    await client.send(new DeleteItemCommand({ TableName: table, Key: key }));
    client.destroy();
  }
}

describe('refresh Lambda handler', () => {
  it('on {"action":"refresh","scope":...} forces a refresh of that scope under the lease', async () => {
    const { handler } = await import('../../functions/refresh/handler.js');
    const before = sim.stats.tokenRequests;

    const result = await handler({ action: 'refresh', scope: 'ba_demo_1' }, context);

    expect(result).toMatchObject({ scope: 'ba_demo_1', status: 'refreshed' });
    expect(sim.stats.tokenRequests).toBe(before + 1);
  });

  describe('KMS cannot seal the new token', () => {
    const kmsFailing = () =>
      kms.on(EncryptCommand).rejects(
        new KMSServiceException({
          name: 'KMSInternalException',
          $fault: 'server',
          message: 'internal error',
          $metadata: { httpStatusCode: 500 },
        }),
      );

    it('regression: a forced refresh fails with sealer_unavailable instead of answering refreshed', async () => {
      // The token was minted and then dropped: the table kept the old one
      // while the operator read "refreshed" with the new expiry.
      kmsFailing();
      const { handler } = await import('../../functions/refresh/handler.js');

      const error = await handler({ action: 'refresh', scope: 'ba_demo_1' }, context).catch(
        (e: unknown) => e,
      );

      expect(error).toMatchObject({ code: 'sealer_unavailable' });
      expect(String((error as Error).message)).toMatch(/^sealer_unavailable: /);
    });

    it('regression: a scheduled run reports the scope failed with sealer_unavailable, not refreshed', async () => {
      // Prepare: the unscoped token is due; KMS refuses to seal its successor
      kmsFailing();
      const { handler } = await import('../../functions/refresh/handler.js');

      // Act
      const error = await withUnscopedDue(() => handler({}, context).catch((e: unknown) => e));

      // Assess
      expect(error).toMatchObject({
        name: 'ScheduledRefreshFailedError',
        report: { refreshed: [], failed: [{ scope: 'unscoped', code: 'sealer_unavailable' }] },
      });
    });
  });

  it('refuses a scope outside the access policy with invalid_request, sending nothing upstream', async () => {
    const { handler } = await import('../../functions/refresh/handler.js');
    const before = sim.stats.tokenRequests;

    await expect(handler({ action: 'refresh', scope: 'ba_other' }, context)).rejects.toMatchObject({
      code: 'invalid_request',
    });
    expect(sim.stats.tokenRequests).toBe(before);
  });

  it('on a schedule event runs the scheduled refresh and reports per scope', async () => {
    const { handler } = await import('../../functions/refresh/handler.js');

    const report = await handler({}, context);

    expect(report).toMatchObject({ failed: [] });
    expect(Object.keys(report as object).sort()).toEqual(
      ['busy', 'deferred', 'failed', 'fresh', 'refreshed', 'unconfigured', 'unused'].sort(),
    );
  });

  it('reports a scope the provider refused without failing the run: the next run is its retry, and the provider alarms page', async () => {
    // Prepare: the unscoped token is due; the provider refuses the next mint
    sim.injectTokenFault({ kind: 'status', status: 400 });
    const { handler } = await import('../../functions/refresh/handler.js');

    // Act
    const report = await withUnscopedDue(() => handler({}, context));

    // Assess
    expect(report).toMatchObject({ failed: [{ scope: 'unscoped', code: 'upstream_error' }] });
  });
});

describe('admin Lambda handler', () => {
  const lambda = mockClient(LambdaClient);
  beforeEach(() => {
    lambda.reset();
    Object.assign(process.env, {
      REFRESH_FUNCTION_NAME: 'tv-refresh',
      ISSUE_KEYS_FUNCTION_NAME: 'tv-issue-keys',
    });
  });

  it('fails an action within seconds, its message starting with its code, when DynamoDB accepts connections and never answers', async () => {
    // Regression: the admin's DynamoDB client had no timeout, so a hung table
    // held the operator's console until the admin's 11-minute Lambda timeout.
    const error = await withHungDynamoDb(async () => {
      const { handler } = await import('../../functions/admin/handler.js');
      return handler({ action: 'status' }, context).catch((e: unknown) => e);
    });

    // Status lists tokens and key jobs at once: either listing may fail first.
    expect(error).toMatchObject({ code: expect.stringMatching(/^(job_)?store_unavailable$/) });
    expect(String((error as Error).message)).toMatch(
      /^(job_)?store_unavailable: DynamoDB \w+ failed \(TimeoutError\)/,
    );
  }, 15_000);

  it('answers status from the table and dispatches refresh and issue-keys to their functions', async () => {
    lambda.on(InvokeCommand).callsFake(async (input: { FunctionName: string }) => ({
      StatusCode: 200,
      Payload: new TextEncoder().encode(
        JSON.stringify(
          input.FunctionName === 'tv-refresh'
            ? { scope: 'ba_demo_1', status: 'refreshed', expires_at: 1 }
            : { issued: ['ba_demo_1'], skipped: [], failed: [] },
        ),
      ),
    }));
    const { handler } = await import('../../functions/admin/handler.js');

    const status = await handler({ action: 'status' }, context);
    const refreshed = await handler({ action: 'refresh', scope: 'ba_demo_1' }, context);
    const issued = await handler(
      { action: 'issue-keys', businessApplicationIds: ['ba_demo_1'] },
      context,
    );
    await handler(
      { action: 'issue-keys', businessApplicationIds: ['ba_demo_1'], force: true },
      context,
    );
    await handler(
      { action: 'clear-pending-key', businessApplicationId: 'ba_demo_1', reason: 'checked' },
      context,
    );

    expect(status).toMatchObject({ tokens: expect.any(Array), key_jobs: expect.any(Array) });
    expect(refreshed).toMatchObject({ status: 'refreshed' });
    expect(issued).toEqual({ issued: ['ba_demo_1'], skipped: [], failed: [] });
    const calls = lambda.commandCalls(InvokeCommand).map((c) => ({
      name: c.args[0].input.FunctionName,
      payload: JSON.parse(new TextDecoder().decode(c.args[0].input.Payload as Uint8Array)),
    }));
    expect(calls).toEqual([
      { name: 'tv-refresh', payload: { action: 'refresh', scope: 'ba_demo_1' } },
      {
        name: 'tv-issue-keys',
        payload: { action: 'issue-keys', businessApplicationIds: ['ba_demo_1'] },
      },
      // A forced run carries the admin's request id: Lambda's retries of this invocation share it.
      {
        name: 'tv-issue-keys',
        payload: {
          action: 'issue-keys',
          businessApplicationIds: ['ba_demo_1'],
          force: true,
          forceId: context.awsRequestId,
        },
      },
      // The admin role may not write KEYS# items: the issue-keys function clears the key.
      {
        name: 'tv-issue-keys',
        payload: {
          action: 'clear-pending-key',
          businessApplicationId: 'ba_demo_1',
          reason: 'checked',
        },
      },
    ]);
  });

  it('names every missing variable at start', async () => {
    delete process.env.REFRESH_FUNCTION_NAME;
    delete process.env.ISSUE_KEYS_FUNCTION_NAME;

    await expect(import('../../functions/admin/handler.js')).rejects.toThrow(
      /REFRESH_FUNCTION_NAME is required.*ISSUE_KEYS_FUNCTION_NAME is required/,
    );
  });
});
