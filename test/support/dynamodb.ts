/** DynamoDB helpers for tests that run against DynamoDB Local (see global-setup.ts). */
import { randomUUID } from 'node:crypto';
import {
  CreateTableCommand,
  DynamoDBClient,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import { inject } from 'vitest';

export const TEST_REGION = 'us-east-1';
export const TEST_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' } as const;

export function dynamoClient(endpoint: string = inject('dynamodbEndpoint')): DynamoDBClient {
  return new DynamoDBClient({
    region: TEST_REGION,
    endpoint,
    credentials: TEST_CREDENTIALS,
    maxAttempts: 1,
  });
}

/**
 * Creates a fresh, uniquely named table (`pk` string hash key, on-demand), waits
 * until it is ACTIVE and, with `ttl: true`, enables TTL on the `ttl` attribute.
 */
export async function createTestTable(
  client: DynamoDBClient,
  options: { ttl?: boolean } = {},
): Promise<string> {
  const name = `test-${randomUUID()}`;
  await client.send(
    new CreateTableCommand({
      TableName: name,
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  await waitUntilTableExists(
    { client, maxWaitTime: 30, minDelay: 1, maxDelay: 2 },
    { TableName: name },
  );
  if (options.ttl) {
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: name,
        TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
      }),
    );
  }
  return name;
}
