import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  type GlobalSecondaryIndex,
  ResourceInUseException,
  ResourceNotFoundException,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import { boundedCalls } from '../functions/adapters/aws-client-options.js';
import { LISTING_INDEXES, type ListingIndex } from '../functions/adapters/table-indexes.js';

/** A client for a local DynamoDB endpoint (any static credentials are accepted). */
export const LOCAL_AWS_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' } as const;

/**
 * A client of the local table, every call bounded: by default as the table's
 * set-up and `npm run admin` use it, so a DYNAMODB_ENDPOINT that accepts
 * connections but never answers fails with a message rather than hanging.
 */
export function localTableClient(
  endpoint: string,
  region: string,
  limits: Parameters<typeof boundedCalls>[0] = {
    requestTimeoutMs: 5000,
    connectionTimeoutMs: 1000,
    maxAttempts: 2,
  },
): DynamoDBClient {
  return new DynamoDBClient({
    endpoint,
    region,
    credentials: LOCAL_AWS_CREDENTIALS,
    ...boundedCalls(limits),
  });
}

function indexSpec(index: ListingIndex): GlobalSecondaryIndex {
  return {
    IndexName: index.name,
    KeySchema: [{ AttributeName: index.key, KeyType: 'HASH' }],
    Projection: index.attributes
      ? { ProjectionType: 'INCLUDE', NonKeyAttributes: [...index.attributes] }
      : { ProjectionType: 'ALL' },
  };
}

const keyDefinitions = (indexes: readonly ListingIndex[]) => [
  { AttributeName: 'pk', AttributeType: 'S' as const },
  ...indexes.map((index) => ({ AttributeName: index.key, AttributeType: 'S' as const })),
];

/**
 * Creates the cache table as the CDK stack defines it (`pk` string hash key,
 * on-demand, TTL on `ttl`, the listing indexes of table-indexes.ts) unless it
 * exists already; an existing table that lacks a listing index gets it.
 */
export async function ensureTable(
  client: DynamoDBClient,
  tableName: string,
  options: { ttl?: boolean } = {},
): Promise<void> {
  let existing: readonly string[] | undefined;
  try {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    existing = (Table?.GlobalSecondaryIndexes ?? []).map((index) => index.IndexName ?? '');
  } catch (error) {
    if (!(error instanceof ResourceNotFoundException)) throw error;
  }
  if (existing !== undefined) {
    await addMissingIndexes(client, tableName, existing);
    return;
  }
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        AttributeDefinitions: keyDefinitions(LISTING_INDEXES),
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        GlobalSecondaryIndexes: LISTING_INDEXES.map(indexSpec),
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  await waitUntilTableExists({ client, maxWaitTime: 30, minDelay: 1 }, { TableName: tableName });
  if (options.ttl !== false) {
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: tableName,
        TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
      }),
    );
  }
}

/** A table made before the listing indexes (DYNAMODB_ENDPOINT): one index per update, as DynamoDB requires. */
async function addMissingIndexes(
  client: DynamoDBClient,
  tableName: string,
  existing: readonly string[],
): Promise<void> {
  for (const index of LISTING_INDEXES.filter((i) => !existing.includes(i.name))) {
    await client.send(
      new UpdateTableCommand({
        TableName: tableName,
        AttributeDefinitions: keyDefinitions([index]),
        GlobalSecondaryIndexUpdates: [{ Create: indexSpec(index) }],
      }),
    );
    await untilIndexActive(client, tableName, index.name);
  }
}

async function untilIndexActive(client: DynamoDBClient, tableName: string, name: string) {
  for (let waited = 0; ; waited += 500) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    const index = Table?.GlobalSecondaryIndexes?.find((i) => i.IndexName === name);
    if (index?.IndexStatus === 'ACTIVE') return;
    if (waited >= 120_000)
      throw new Error(`index ${name} of ${tableName} is not active after 2 min`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
