import { type DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import type { Item } from './dynamodb-attributes.js';
import type { ListingIndex } from './table-indexes.js';

/**
 * Every item of a listing index (table-indexes.ts) whose `pk` begins with
 * `prefix`, page by page. The index holds only such items; the filter keeps
 * the answer right even if one strayed in. Eventually consistent, as every
 * read of a global secondary index is: an item written a moment ago may be
 * missing (operator status and the scheduled refresh read few items, and
 * look again minutes later). `guard` wraps each page's call, so each store
 * maps failures to its own error.
 */
export async function scanIndex(
  client: DynamoDBClient,
  table: string,
  index: ListingIndex,
  prefix: string,
  guard: <T>(call: () => Promise<T>) => Promise<T>,
): Promise<Item[]> {
  const items: Item[] = [];
  let start: Item | undefined;
  do {
    const page = await guard(() =>
      client.send(
        new ScanCommand({
          TableName: table,
          IndexName: index.name,
          Select: 'ALL_PROJECTED_ATTRIBUTES',
          FilterExpression: 'begins_with(pk, :prefix)',
          ExpressionAttributeValues: { ':prefix': { S: prefix } },
          ExclusiveStartKey: start,
        }),
      ),
    );
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}
