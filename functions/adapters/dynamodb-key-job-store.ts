import { randomUUID } from 'node:crypto';
import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import { keyJobKey } from '../issue-keys/business-application-id.js';
import { type FailureCode, KeyJobStoreError, LeaseLostError } from '../issue-keys/errors.js';
import type {
  KeyJobRecord,
  KeyJobState,
  KeyJobStore,
  KeyJobSummary,
  SealedEncoding,
} from '../issue-keys/ports.js';
import { type Item, num, readNum } from './dynamodb-attributes.js';

type WriteInput = Pick<
  UpdateItemCommandInput,
  'UpdateExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'
>;

const STATES: readonly KeyJobState[] = ['pending', 'received', 'stored', 'rejected'];
const seconds = (ms: number): number => Math.floor(ms / 1000);

/** `expression` with `assignment` added to its SET clause (or a SET clause added). */
function withSet(expression: string, assignment: string): string {
  return /^SET /.test(expression)
    ? expression.replace(/^SET /, `SET ${assignment}, `)
    : `SET ${assignment} ${expression}`.trim();
}

/** The item's state; one that is absent or unknown reads as `pending`. */
export function keyJobState(item: Item): KeyJobState {
  const state = item.state?.S as KeyJobState | undefined;
  return state && STATES.includes(state) ? state : 'pending';
}

const optional = <T>(name: string, value: T | undefined) =>
  value === undefined ? {} : { [name]: value };

/**
 * A job's status fields, the same whether read from the item or from the
 * key-jobs index, which projects only these (table-indexes.ts).
 */
export function keyJobStatusFromItem(item: Item): Omit<KeyJobSummary, 'awaitingStore'> {
  const pk = item.pk?.S ?? '';
  return {
    businessApplicationId: item.business_application_id?.S ?? pk.slice('KEYS#'.length),
    state: keyJobState(item),
    attempts: readNum(item.attempts) ?? 0,
    issueCount: readNum(item.issue_count) ?? 0,
    ...optional('leaseUntilMs', readNum(item.lease_until)),
    ...optional('lastError', item.last_error?.S as FailureCode | undefined),
    ...optional('lastErrorAt', readNum(item.last_error_at)),
    ...optional('storedAt', readNum(item.stored_at)),
    ...optional('secretName', item.secret_name?.S),
  };
}

/** Maps a `KEYS#<id>` item to the job's shape. */
export function keyJobFromItem(item: Item): KeyJobRecord {
  const blob = item.sealed_response?.B;
  const encoding = item.sealed_encoding?.S as SealedEncoding | undefined;
  return {
    ...keyJobStatusFromItem(item),
    ...optional('idempotencyKey', item.idempotency_key?.S),
    ...optional('forceId', item.force_id?.S),
    ...optional('leaseOwner', item.lease_owner?.S),
    ...optional('createdAt', readNum(item.created_at)),
    ...optional('updatedAt', readNum(item.updated_at)),
    ...optional('lastAttemptAt', readNum(item.last_attempt_at)),
    ...optional('receivedAt', readNum(item.received_at)),
    ...optional('responseStatus', readNum(item.response_status)),
    ...(blob !== undefined && (encoding === 'utf8' || encoding === 'base64')
      ? { sealed: { blob, encoding } }
      : {}),
    ...optional('secretVersion', item.secret_version?.S),
    ...optional(
      'forcedBy',
      item.forced_by?.L?.flatMap((entry) => (entry.S === undefined ? [] : [entry.S])),
    ),
  };
}

/**
 * Key-issuing job records (`pk = KEYS#<id>`) in the token cache table. No `ttl`
 * is ever written on them: a record lives as long as the keys it describes.
 * Every write but `acquire` requires this run to hold the lease
 * (`lease_owner = :owner`), else LeaseLostError; every write applies at most
 * once, and one whose reply was lost is known as this run's own (`#write`).
 * SDK failures become KeyJobStoreError.
 */
export class DynamoDbKeyJobStore implements KeyJobStore {
  readonly #client: DynamoDBClient;
  readonly #table: string;

  constructor(client: DynamoDBClient, tableName: string) {
    this.#client = client;
    this.#table = tableName;
  }

  async get(id: string): Promise<KeyJobRecord | undefined> {
    const out = await this.#send('GetItem', () =>
      this.#client.send(
        new GetItemCommand({
          TableName: this.#table,
          Key: { pk: { S: keyJobKey(id) } },
          ConsistentRead: true,
        }),
      ),
    );
    return out.Item ? keyJobFromItem(out.Item) : undefined;
  }

  async acquire(
    id: string,
    owner: string,
    nowMs: number,
    untilMs: number,
  ): Promise<KeyJobRecord | undefined> {
    const outcome = await this.#write(
      id,
      {
        UpdateExpression: [
          'SET lease_owner = :owner, lease_until = :until',
          'business_application_id = :id',
          '#state = if_not_exists(#state, :pending)',
          'attempts = if_not_exists(attempts, :zero)',
          'issue_count = if_not_exists(issue_count, :zero)',
          'created_at = if_not_exists(created_at, :now)',
          'updated_at = :now',
        ].join(', '),
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: {
          ':owner': { S: owner },
          ':until': num(untilMs),
          ':id': { S: id },
          ':pending': { S: 'pending' },
          ':zero': num(0),
          ':now': num(seconds(nowMs)),
          ':nowMs': num(nowMs),
        },
        ReturnValues: 'ALL_NEW',
      },
      'attribute_not_exists(lease_until) OR lease_until < :nowMs',
    );
    return outcome.applied ? keyJobFromItem(outcome.item) : undefined;
  }

  async begin(
    id: string,
    owner: string,
    idempotencyKey: string,
    nowMs: number,
    untilMs: number,
    forceId?: string,
  ): Promise<void> {
    await this.#leased(id, owner, {
      UpdateExpression:
        'SET idempotency_key = :key, #state = :pending, attempts = :zero, lease_until = :until, updated_at = :now' +
        (forceId === undefined ? ' REMOVE force_id' : ', force_id = :force'),
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: {
        ':key': { S: idempotencyKey },
        ':pending': { S: 'pending' },
        ':zero': num(0),
        ':until': num(untilMs),
        ':now': num(seconds(nowMs)),
        ...(forceId === undefined ? {} : { ':force': { S: forceId } }),
      },
    });
  }

  async recordAttempt(id: string, owner: string, nowMs: number, untilMs: number): Promise<void> {
    await this.#leased(id, owner, {
      UpdateExpression:
        'SET attempts = if_not_exists(attempts, :zero) + :one, last_attempt_at = :now, updated_at = :now, lease_until = :until',
      ExpressionAttributeValues: {
        ':zero': num(0),
        ':one': num(1),
        ':now': num(seconds(nowMs)),
        ':until': num(untilMs),
      },
    });
  }

  async saveReceived(
    id: string,
    owner: string,
    received: { blob: Uint8Array; encoding: SealedEncoding; status: number },
    nowMs: number,
    untilMs: number,
  ): Promise<void> {
    await this.#leased(id, owner, {
      UpdateExpression:
        'SET #state = :received, sealed_response = :blob, sealed_encoding = :encoding, response_status = :status, received_at = :now, updated_at = :now, lease_until = :until',
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: {
        ':received': { S: 'received' },
        ':blob': { B: received.blob },
        ':encoding': { S: received.encoding },
        ':status': num(received.status),
        ':now': num(seconds(nowMs)),
        ':until': num(untilMs),
      },
    });
  }

  async markStored(
    id: string,
    owner: string,
    stored: {
      secretName: string;
      secretVersion: string;
      status: number;
      forcedBy?: readonly string[];
    },
    nowMs: number,
  ): Promise<void> {
    const { forcedBy } = stored;
    await this.#leased(id, owner, {
      UpdateExpression:
        'SET #state = :stored, stored_at = :now, updated_at = :now, secret_name = :name, ' +
        'secret_version = :version, response_status = :status, ' +
        `issue_count = if_not_exists(issue_count, :zero) + :one${forcedBy ? ', forced_by = :forced' : ''} ` +
        'REMOVE idempotency_key, force_id, sealed_response, sealed_encoding, last_error, ' +
        'last_error_at, lease_owner, lease_until',
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: {
        ':stored': { S: 'stored' },
        ':now': num(seconds(nowMs)),
        ':name': { S: stored.secretName },
        ':version': { S: stored.secretVersion },
        ':status': num(stored.status),
        ':zero': num(0),
        ':one': num(1),
        ...(forcedBy ? { ':forced': { L: forcedBy.map((f) => ({ S: f })) } } : {}),
      },
    });
  }

  async recordFailure(
    id: string,
    owner: string,
    code: FailureCode,
    nowMs: number,
    next?: 'stored' | 'rejected',
  ): Promise<void> {
    const values: Item = { ':code': { S: code }, ':now': num(seconds(nowMs)) };
    let update = 'SET last_error = :code, last_error_at = :now, updated_at = :now';
    let remove = 'REMOVE lease_owner, lease_until';
    let condition: string | undefined;
    if (next) {
      update += ', #state = :next';
      remove += ', idempotency_key, force_id';
      values[':next'] = { S: next };
      // Never drop the key of an answer that waits to be stored.
      values[':received'] = { S: 'received' };
      condition = '#state <> :received';
    }
    await this.#leased(
      id,
      owner,
      {
        UpdateExpression: `${update} ${remove}`,
        ...(next ? { ExpressionAttributeNames: { '#state': 'state' } } : {}),
        ExpressionAttributeValues: values,
      },
      condition,
    );
  }

  async release(id: string, owner: string): Promise<void> {
    try {
      await this.#leased(id, owner, { UpdateExpression: 'REMOVE lease_owner, lease_until' });
    } catch (error) {
      if (!(error instanceof LeaseLostError)) throw error;
    }
  }

  async clearPendingKey(
    id: string,
    idempotencyKey: string,
    nowMs: number,
    next: 'stored' | 'rejected',
  ): Promise<boolean> {
    const outcome = await this.#write(
      id,
      {
        UpdateExpression: 'SET #state = :next, updated_at = :now REMOVE idempotency_key, force_id',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: {
          ':next': { S: next },
          ':now': num(seconds(nowMs)),
          ':key': { S: idempotencyKey },
          ':received': { S: 'received' },
          ':nowMs': num(nowMs),
        },
      },
      'idempotency_key = :key AND #state <> :received AND attribute_not_exists(sealed_response) ' +
        'AND (attribute_not_exists(lease_until) OR lease_until < :nowMs)',
    );
    return outcome.applied;
  }

  /** An UpdateItem that requires `owner` to hold the lease, else LeaseLostError. */
  async #leased(
    id: string,
    owner: string,
    input: WriteInput,
    extraCondition?: string,
  ): Promise<void> {
    const outcome = await this.#write(
      id,
      {
        ...input,
        ExpressionAttributeValues: { ...input.ExpressionAttributeValues, ':owner': { S: owner } },
      },
      `lease_owner = :owner${extraCondition ? ` AND ${extraCondition}` : ''}`,
    );
    if (!outcome.applied) throw new LeaseLostError(id);
  }

  /**
   * The one way this store writes a record: a conditional UpdateItem that applies
   * at most once and knows itself when its reply was lost.
   *
   * The SDK resends a request whose reply did not arrive (a timeout, a reset
   * connection) with the same input, though the first one may have reached the
   * table: the resent write's condition then fails on the state the first one
   * wrote (a lease it took, a lease it gave up), and the run would call its own
   * work `lease_lost` or `job_in_progress`. So each write sets `write_id` to an
   * id of its own and requires the item not to carry it already; when the
   * condition fails, DynamoDB returns the item as it is
   * (`ReturnValuesOnConditionCheckFailure: ALL_OLD`, see
   * https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateItem.html),
   * and an item carrying this write's id means the write applied. A resent
   * write never applies twice (an attempt is counted once).
   *
   * Returns the item after the write (`ALL_NEW` when asked for) or, when the
   * condition failed for another reason, `applied: false`.
   */
  async #write(
    id: string,
    input: WriteInput & Pick<UpdateItemCommandInput, 'ReturnValues'>,
    condition: string,
  ): Promise<{ applied: true; item: Item } | { applied: false; item?: Item }> {
    const writeId = randomUUID();
    try {
      const out = await this.#send('UpdateItem', () =>
        this.#client.send(
          new UpdateItemCommand({
            TableName: this.#table,
            Key: { pk: { S: keyJobKey(id) } },
            ...input,
            UpdateExpression: withSet(input.UpdateExpression ?? '', 'write_id = :write_id'),
            ConditionExpression: `(${condition}) AND (attribute_not_exists(write_id) OR write_id <> :write_id)`,
            ExpressionAttributeValues: {
              ...input.ExpressionAttributeValues,
              ':write_id': { S: writeId },
            },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        ),
      );
      return { applied: true, item: out.Attributes ?? {} };
    } catch (error) {
      const failed = error instanceof KeyJobStoreError ? error.cause : undefined;
      if (!(failed instanceof ConditionalCheckFailedException)) throw error;
      const item = failed.Item;
      if (item?.write_id?.S === writeId) return { applied: true, item };
      return item === undefined ? { applied: false } : { applied: false, item };
    }
  }

  async #send<T>(operation: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      const name = error instanceof Error ? error.name : 'UnknownError';
      throw new KeyJobStoreError(`DynamoDB ${operation} failed (${name})`, { cause: error });
    }
  }
}
