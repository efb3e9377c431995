import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KeyJobStoreError } from '../issue-keys/errors.js';
import type { KeyJobSummaries, KeyJobSummary } from '../issue-keys/ports.js';
import type { Item } from './dynamodb-attributes.js';
import { keyJobStatusFromItem } from './dynamodb-key-job-store.js';
import { scanIndex } from './dynamodb-scan.js';
import { KEY_JOB_INDEX } from './table-indexes.js';

/** Maps an item of the key-jobs index (its projected attributes only) to a summary. */
export function keyJobSummaryFromItem(item: Item): KeyJobSummary {
  return { ...keyJobStatusFromItem(item), awaitingStore: item.sealed_encoding?.S !== undefined };
}

/**
 * Key-job records for operators, read from the key-jobs index
 * (table-indexes.ts), which holds their non-secret status attributes only:
 * the admin role may Scan that index and no `KEYS#` item of the table.
 * SDK failures become KeyJobStoreError.
 */
export class DynamoDbKeyJobIndex implements KeyJobSummaries {
  readonly #client: DynamoDBClient;
  readonly #table: string;

  constructor(client: DynamoDBClient, tableName: string) {
    this.#client = client;
    this.#table = tableName;
  }

  async list(): Promise<KeyJobSummary[]> {
    const items = await scanIndex(this.#client, this.#table, KEY_JOB_INDEX, 'KEYS#', (call) =>
      this.#send(call),
    );
    return items.map((item) => keyJobSummaryFromItem(item));
  }

  async #send<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      const name = error instanceof Error ? error.name : 'UnknownError';
      throw new KeyJobStoreError(`DynamoDB Scan failed (${name})`, { cause: error });
    }
  }
}
