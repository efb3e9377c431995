/**
 * The local stack's vend instances call DynamoDB with bounds like the vend
 * function's in AWS (aws-runtime.ts), so a table that stops answering turns
 * into degraded service (SPEC section 5), as in AWS, not into vends that hang;
 * and a DYNAMODB_ENDPOINT that never answers stops `npm start` with a message.
 */
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { ConfigError } from '../../functions/core/errors.js';
import { DEMO_IDENTITY } from '../../local/local-identities.js';
import { type LocalStack, startLocalStack } from '../../local/stack.js';
import { type DynamoFaultProxy, startDynamoFaultProxy } from '../support/dynamodb-fault-proxy.js';
import { signedGet } from '../support/sigv4.js';
import { quietLogger } from '../support/vend-harness.js';

let proxy: DynamoFaultProxy;
let stack: LocalStack;

beforeAll(async () => {
  proxy = await startDynamoFaultProxy(inject('dynamodbEndpoint'));
  stack = await startLocalStack(
    { PORT: '0', DYNAMODB_ENDPOINT: proxy.endpoint, TABLE_NAME: `outage-${Date.now()}` },
    { stackFile: null, logger: quietLogger() },
  );
});
afterAll(async () => {
  await stack?.stop();
  await proxy?.close();
});

it('regression: a DynamoDB that stops answering does not hang local vends: they are served degraded', async () => {
  proxy.set(() => ({ kind: 'hang' }));
  const started = Date.now();

  const response = await signedGet(
    `${stack.info.functionUrl}/token?scope=ba_demo_1`,
    DEMO_IDENTITY,
  );

  expect(response.status).toBe(200);
  expect(await response.json()).toMatchObject({ token_type: 'Bearer', scope: 'ba_demo_1' });
  // The local bound: 2 s an attempt, 2 attempts, for the first look and the read after it.
  expect(Date.now() - started).toBeLessThan(15_000);
  proxy.set(undefined);
});

it('regression: a DYNAMODB_ENDPOINT that accepts connections but never answers fails the start, named', async () => {
  const silent = await startDynamoFaultProxy(inject('dynamodbEndpoint'));
  silent.set(() => ({ kind: 'hang' }));
  const started = Date.now();
  try {
    const error = await startLocalStack(
      { PORT: '0', DYNAMODB_ENDPOINT: silent.endpoint, TABLE_NAME: `silent-${Date.now()}` },
      { stackFile: null, logger: quietLogger() },
    ).then(
      async (stack) => {
        await stack.stop();
        throw new Error('the stack started');
      },
      (caught: unknown) => caught as Error,
    );

    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toMatch(
      /^DYNAMODB_ENDPOINT .* did not serve table .*; is a DynamoDB running there\?$/,
    );
    expect(Date.now() - started).toBeLessThan(15_000);
  } finally {
    await silent.close();
  }
}, 30_000);
