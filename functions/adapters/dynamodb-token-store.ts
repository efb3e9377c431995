import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { StoreUnavailableError } from '../core/errors.js';
import type {
  FirstLook,
  LeaseTakeover,
  RefreshFailure,
  Revision,
  StoredItem,
  TokenStore,
} from '../core/ports.js';
import { type Item, num } from './dynamodb-attributes.js';
import { scanIndex } from './dynamodb-scan.js';
import {
  FAILURE_ATTRIBUTES,
  failureUpdate,
  fromItem,
  leaseTtl,
  sameRevision,
  theLease,
} from './dynamodb-token-item.js';
import { TOKEN_INDEX } from './table-indexes.js';

/** The item holds exactly this lease (owner and end): the caller's own applied write. */
function holds(item: StoredItem | undefined, lease: { owner: string; untilMs: number }): boolean {
  return item?.leaseOwner === lease.owner && item.leaseUntil === lease.untilMs;
}

/**
 * DynamoDB's answers to too many requests (after the SDK's own retries): the
 * table works, it refuses the rate. Per partition, on-demand or provisioned, a
 * table serves at most 3,000 read units a second ("Understanding DynamoDB warm
 * throughput", AWS docs), so many waiters polling one item can meet it.
 */
const THROTTLING_ERRORS = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
]);

/** The refused condition behind a store error, or undefined for any other failure. */
function refusal(error: unknown): ConditionalCheckFailedException | undefined {
  return error instanceof StoreUnavailableError &&
    error.cause instanceof ConditionalCheckFailedException
    ? error.cause
    : undefined;
}

/**
 * The L2 cache in DynamoDB (docs/cache-design.md): one item per scope, the lease
 * beside the token, `ttl = expires_at - 60`. SDK failures become
 * StoreUnavailableError; a failed condition is an answer, not an error.
 * Every write that can create a token item (the lease) or that marks one (the
 * token, a use mark) also sets `token_pk`, which puts the item in the token
 * index that `list` reads (table-indexes.ts).
 */
export class DynamoDbTokenStore implements TokenStore {
  readonly #client: DynamoDBClient;
  readonly #table: string;

  constructor(client: DynamoDBClient, tableName: string) {
    this.#client = client;
    this.#table = tableName;
  }

  async get(pk: string): Promise<StoredItem | undefined> {
    const out = await this.#send('GetItem', () =>
      this.#client.send(
        new GetItemCommand({
          TableName: this.#table,
          Key: { pk: { S: pk } },
          ConsistentRead: true,
        }),
      ),
    );
    return out.Item ? fromItem(out.Item) : undefined;
  }

  async tryAcquireLease(
    pk: string,
    owner: string,
    nowMs: number,
    untilMs: number,
    seenRevision?: Revision,
    takeover: LeaseTakeover = {},
  ): Promise<boolean> {
    const values: Item = { ':n': { S: 'N' } };
    // Whatever the core read as "no lease" or "no token" (absent, or not a
    // number) must satisfy the condition too, or such an item wedges its scope.
    const free = ['attribute_not_exists(lease_until)', 'NOT attribute_type(lease_until, :n)'];
    const { holder } = takeover;
    if (holder) {
      // Exactly the lease the caller watched, so a lease renewed meanwhile stays.
      // An owner the core read as absent may also be one that is not a string.
      values[':seenUntil'] = num(holder.untilMs);
      if (holder.owner === undefined) {
        values[':s'] = { S: 'S' };
        free.push(
          '(lease_until = :seenUntil AND (attribute_not_exists(lease_owner) OR NOT attribute_type(lease_owner, :s)))',
        );
      } else {
        values[':seenOwner'] = { S: holder.owner };
        free.push('(lease_until = :seenUntil AND lease_owner = :seenOwner)');
      }
    }
    let condition = `(${free.join(' OR ')})`;
    if (seenRevision) condition += ` AND ${sameRevision(seenRevision, values)}`;
    const lease = { owner, untilMs, ttl: leaseTtl(nowMs, seenRevision?.expiresAt) };
    return (await this.#takeLease(pk, lease, condition, values)).leased;
  }

  /**
   * Takes a lease under `condition` (with its own `values`). A refused write
   * hands the item back (`ReturnValuesOnConditionCheckFailure: ALL_OLD`, no
   * read units). A refusal that shows this very lease (owner and end) means
   * the write was applied and its answer lost, and the SDK's retry was
   * refused: the lease is the caller's. Without this the caller would wait
   * out its own lease. The core never makes two attempts with one end.
   */
  async #takeLease(
    pk: string,
    lease: { owner: string; untilMs: number; ttl: number },
    condition: string,
    values: Item,
  ): Promise<{ leased: true } | { leased: false; item: StoredItem | undefined }> {
    try {
      await this.#send('UpdateItem', () =>
        this.#client.send(this.#leaseWrite(pk, lease, condition, values)),
      );
      return { leased: true };
    } catch (error) {
      const refused = refusal(error);
      if (!refused) throw error;
      const item = refused.Item ? fromItem(refused.Item) : undefined;
      return holds(item, lease) ? { leased: true } : { leased: false, item };
    }
  }

  /** The write that takes a lease, under `condition` (with its own `values`). */
  #leaseWrite(
    pk: string,
    lease: { owner: string; untilMs: number; ttl: number },
    condition: string,
    values: Item,
  ): UpdateItemCommand {
    return new UpdateItemCommand({
      TableName: this.#table,
      Key: { pk: { S: pk } },
      UpdateExpression:
        'SET lease_owner = :owner, lease_until = :until, #ttl = :ttl, token_pk = :pk',
      ConditionExpression: condition,
      ExpressionAttributeNames: { '#ttl': 'ttl' },
      ExpressionAttributeValues: {
        ...values,
        ':owner': { S: lease.owner },
        ':until': num(lease.untilMs),
        ':ttl': num(lease.ttl),
        ':pk': { S: pk },
      },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    });
  }

  /**
   * One conditional UpdateItem: `attribute_not_exists(pk)` writes the lease;
   * when the item exists, the refusal hands it back (see #takeLease). That
   * costs no read units (UpdateItem API reference); the refused write is
   * billed as a write of the item's size, and only a cold instance's first
   * lookup of a scope pays it. Powertools' idempotency utility locks its
   * records the same way.
   */
  async leaseIfAbsent(
    pk: string,
    owner: string,
    nowMs: number,
    untilMs: number,
  ): Promise<FirstLook> {
    const lease = { owner, untilMs, ttl: leaseTtl(nowMs, null) };
    const taken = await this.#takeLease(pk, lease, 'attribute_not_exists(pk)', {});
    if (taken.leased) return { leased: true };
    // The item exists, so DynamoDB returns it; read it should it ever not.
    const item = taken.item ?? (await this.get(pk));
    return holds(item, lease) ? { leased: true } : { leased: false, item };
  }

  async putToken(
    pk: string,
    token: NonNullable<StoredItem['token']>,
    owner: string,
    options: { readonly usedAt?: number; readonly leaseUntil?: number } = {},
  ): Promise<boolean> {
    const values: Item = {
      ':sealed': { B: token.sealed },
      ':type': { S: token.tokenType },
      ':issued': num(token.issuedAt),
      ':expires': num(token.expiresAt),
      ':ttl': num(token.expiresAt - 60),
      ':version': { S: token.credentialsVersion },
      ':owner': { S: owner },
      ':pk': { S: pk },
    };
    const set = [
      'sealed_token = :sealed',
      'token_type = :type',
      'issued_at = :issued',
      'expires_at = :expires',
      '#ttl = :ttl',
      'credentials_version = :version',
      'token_pk = :pk',
    ];
    const remove = ['lease_owner', 'lease_until', ...FAILURE_ATTRIBUTES];
    if (token.scope === undefined) remove.push('#scope');
    else {
      set.push('#scope = :scope');
      values[':scope'] = { S: token.scope };
    }
    if (token.replacesRevoked) set.push('replaces_revoked = :rr');
    else remove.push('replaces_revoked');
    if (token.replacesRevoked) values[':rr'] = { BOOL: true };
    if (token.mintMs === undefined) remove.push('mint_ms');
    else {
      set.push('mint_ms = :mintms');
      values[':mintms'] = num(Math.round(token.mintMs));
    }
    if (token.providerCreatedAt === undefined) remove.push('provider_created_at');
    else {
      set.push('provider_created_at = :created');
      values[':created'] = num(token.providerCreatedAt);
    }
    if (options.usedAt !== undefined) {
      set.push('last_used_at = :used');
      values[':used'] = num(options.usedAt);
    }
    if (options.leaseUntil !== undefined) values[':leaseUntil'] = num(options.leaseUntil);
    try {
      await this.#send('UpdateItem', () =>
        this.#client.send(
          new UpdateItemCommand({
            TableName: this.#table,
            Key: { pk: { S: pk } },
            UpdateExpression: `SET ${set.join(', ')} REMOVE ${remove.join(', ')}`,
            ConditionExpression: theLease(options.leaseUntil),
            ExpressionAttributeNames: { '#ttl': 'ttl', '#scope': 'scope' },
            ExpressionAttributeValues: values,
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        ),
      );
      return true;
    } catch (error) {
      const refused = refusal(error);
      if (!refused) throw error;
      // This very token: the write was applied, its answer lost, and the SDK's
      // retry refused (the lease is gone). Every seal differs, so the bytes tell.
      const stored = refused.Item?.sealed_token?.B;
      return stored !== undefined && Buffer.from(stored).equals(Buffer.from(token.sealed));
    }
  }

  async releaseLease(
    pk: string,
    owner: string,
    failure?: RefreshFailure,
    leaseUntil?: number,
  ): Promise<void> {
    const recorded = failure && failureUpdate(failure);
    await this.#conditional('UpdateItem', () =>
      this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: { pk: { S: pk } },
          UpdateExpression: recorded
            ? `SET ${recorded.set} REMOVE ${['lease_owner', 'lease_until', ...recorded.remove].join(', ')}`
            : 'REMOVE lease_owner, lease_until',
          ConditionExpression: theLease(leaseUntil),
          ExpressionAttributeValues: {
            ':owner': { S: owner },
            ...(leaseUntil === undefined ? {} : { ':leaseUntil': num(leaseUntil) }),
            ...recorded?.values,
          },
        }),
      ),
    );
  }

  async markUsed(pk: string, atSeconds: number): Promise<void> {
    // A later mark from another instance is kept: time only moves forward.
    await this.#conditional('UpdateItem', () =>
      this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: { pk: { S: pk } },
          UpdateExpression: 'SET last_used_at = :at, token_pk = :pk',
          ConditionExpression:
            'attribute_exists(pk) AND (attribute_not_exists(last_used_at) OR NOT attribute_type(last_used_at, :n) OR last_used_at < :at)',
          ExpressionAttributeValues: { ':at': num(atSeconds), ':n': { S: 'N' }, ':pk': { S: pk } },
        }),
      ),
    );
  }

  async delete(pk: string): Promise<boolean> {
    return this.#conditional('DeleteItem', () =>
      this.#client.send(
        new DeleteItemCommand({
          TableName: this.#table,
          Key: { pk: { S: pk } },
          ConditionExpression: 'attribute_exists(pk)',
        }),
      ),
    );
  }

  /** Every token item, from the token index (eventually consistent). */
  async list(): Promise<StoredItem[]> {
    const items = await scanIndex(this.#client, this.#table, TOKEN_INDEX, 'TOKEN#', (call) =>
      this.#send('Scan', call),
    );
    return items.map((item) => fromItem(item));
  }

  async #conditional(operation: string, call: () => Promise<unknown>): Promise<boolean> {
    try {
      await this.#send(operation, call);
      return true;
    } catch (error) {
      if (
        error instanceof StoreUnavailableError &&
        error.cause instanceof ConditionalCheckFailedException
      ) {
        return false;
      }
      throw error;
    }
  }

  async #send<T>(operation: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      const name = error instanceof Error ? error.name : 'UnknownError';
      throw new StoreUnavailableError(`DynamoDB ${operation} failed (${name})`, {
        cause: error,
        throttled: THROTTLING_ERRORS.has(name),
      });
    }
  }
}
