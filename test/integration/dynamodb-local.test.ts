import {
  DescribeTimeToLiveCommand,
  GetItemCommand,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestTable, dynamoClient } from '../support/dynamodb.js';

describe('DynamoDB Local', () => {
  const client = dynamoClient();
  afterAll(() => client.destroy());

  it('creates a table, puts and gets an item', async () => {
    const table = await createTestTable(client);
    expect(table).toMatch(/^test-/);
    await client.send(
      new PutItemCommand({
        TableName: table,
        Item: { pk: { S: 'TOKEN#ba_1' }, expires_at: { N: '1700000000' } },
      }),
    );
    const got = await client.send(
      new GetItemCommand({
        TableName: table,
        Key: { pk: { S: 'TOKEN#ba_1' } },
        ConsistentRead: true,
      }),
    );
    expect(got.Item).toEqual({ pk: { S: 'TOKEN#ba_1' }, expires_at: { N: '1700000000' } });
  });

  it('enables TTL on the ttl attribute when asked', async () => {
    const table = await createTestTable(client, { ttl: true });
    const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: table }));
    expect(ttl.TimeToLiveDescription?.AttributeName).toBe('ttl');
    expect(ttl.TimeToLiveDescription?.TimeToLiveStatus).toMatch(/^ENABL/);
  });
});
