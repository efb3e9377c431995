/** DynamoDB helpers for tests that run against DynamoDB Local (see global-setup.ts). */
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { inject } from 'vitest';
import { ensureTable, LOCAL_AWS_CREDENTIALS } from '../../local/table.js';

export const TEST_REGION = 'us-east-1';
export const TEST_CREDENTIALS = LOCAL_AWS_CREDENTIALS;

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
  await ensureTable(client, name, { ttl: options.ttl === true });
  return name;
}
