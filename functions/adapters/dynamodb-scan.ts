import { type AttributeValue, type DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';

export type Item = Record<string, AttributeValue>;

/**
 * Every item whose `pk` begins with `prefix`, page by page, strongly
 * consistent (operator status and the scheduled refresh read few items).
 * `guard` wraps each page's call, so each store maps failures to its own error.
 */
export async function scanByPrefix(
  client: DynamoDBClient,
  table: string,
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
          ConsistentRead: true,
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
