/**
 * The key-job store's conditions on DynamoDB Local: writes under the run
 * lease, the guard on an answer waiting to be stored, and writes whose reply
 * was lost.
 */
import { type DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DynamoDbKeyJobStore } from '../../functions/adapters/dynamodb-key-job-store.js';
import { LeaseLostError } from '../../functions/issue-keys/errors.js';
import { createTestTable, dynamoClient } from '../support/dynamodb.js';
import { lostReplyClient } from '../support/lost-reply-client.js';
import { rejection } from '../support/rejection.js';

const ID = 'ba_demo_1';
const NOW = 1_800_000_000_500;
const LEASE = 60_000;
const RECEIVED = { blob: Uint8Array.of(1, 2, 3), encoding: 'utf8' as const, status: 201 };
const STORED = { secretName: 'tvm/basic-auth/ba_demo_1', secretVersion: 'k1', status: 201 };

let client: DynamoDBClient;
let table: string;
let store: DynamoDbKeyJobStore;

beforeAll(() => {
  client = dynamoClient();
});
afterAll(() => client.destroy());
beforeEach(async () => {
  table = await createTestTable(client);
  store = new DynamoDbKeyJobStore(client, table);
});

const rawRecord = async () =>
  (
    await client.send(
      new GetItemCommand({
        TableName: table,
        Key: { pk: { S: `KEYS#${ID}` } },
        ConsistentRead: true,
      }),
    )
  ).Item;

describe('the run lease', () => {
  it('is held until it ends: taken only once its end has passed', async () => {
    await store.acquire(ID, 'run-a', NOW, NOW + LEASE);

    const atItsEnd = await store.acquire(ID, 'run-b', NOW + LEASE, NOW + 2 * LEASE);
    const after = await store.acquire(ID, 'run-b', NOW + LEASE + 1, NOW + 2 * LEASE);

    expect(atItsEnd).toBeUndefined();
    expect(after).toMatchObject({ leaseOwner: 'run-b' });
  });
});

describe('a record this version cannot read', () => {
  it('with a state it does not know reads as pending: never as keys stored', async () => {
    await client.send(
      new PutItemCommand({
        TableName: table,
        Item: { pk: { S: `KEYS#${ID}` }, state: { S: 'archived' }, attempts: { N: '2' } },
      }),
    );

    expect(await store.get(ID)).toMatchObject({ businessApplicationId: ID, state: 'pending' });
  });
});

describe('a run whose lease was taken over', () => {
  it('can no longer write: begin, save-received, mark-stored and record-failure fail as lease lost', async () => {
    // Prepare: A takes the lease; it runs out; B takes the id over and begins.
    expect(await store.acquire(ID, 'run-a', NOW, NOW + LEASE)).toBeDefined();
    const later = NOW + LEASE + 1;
    expect(await store.acquire(ID, 'run-b', later, later + LEASE)).toMatchObject({
      leaseOwner: 'run-b',
    });
    await store.begin(ID, 'run-b', 'key-b', later, later + LEASE);
    const before = await rawRecord();

    // Act
    const writes = [
      () => store.begin(ID, 'run-a', 'key-a', later, later + LEASE),
      () => store.saveReceived(ID, 'run-a', RECEIVED, later, later + LEASE),
      () => store.markStored(ID, 'run-a', STORED, later),
      () => store.recordFailure(ID, 'run-a', 'upstream_error', later),
      () => store.recordFailure(ID, 'run-a', 'feature_not_enabled', later, 'rejected'),
      () => store.recordAttempt(ID, 'run-a', later, later + LEASE),
    ];
    const errors: unknown[] = [];
    for (const write of writes) errors.push(await write().catch((e: unknown) => e));

    // Assess
    for (const error of errors) expect(error).toBeInstanceOf(LeaseLostError);
    expect(await rawRecord()).toEqual(before);
  });
});

describe('an answer waiting to be stored', () => {
  it('keeps its Idempotency-Key and sealed copy through a failure that names a next state', async () => {
    // Prepare
    await store.acquire(ID, 'run-a', NOW, NOW + LEASE);
    await store.begin(ID, 'run-a', 'key-a', NOW, NOW + LEASE);
    await store.saveReceived(ID, 'run-a', RECEIVED, NOW, NOW + LEASE);

    // Act
    const refused = store.recordFailure(ID, 'run-a', 'feature_not_enabled', NOW, 'rejected');

    // Assess
    await rejection(refused, LeaseLostError);
    expect(await store.get(ID)).toMatchObject({
      state: 'received',
      idempotencyKey: 'key-a',
      sealed: { blob: RECEIVED.blob, encoding: 'utf8' },
    });
  });
});

describe('a write whose reply was lost, resent by the SDK', () => {
  it('is known as this run own write, not as a lease lost or a job in progress (lost-reply defect)', async () => {
    // Prepare: every write reaches the table, then its reply is lost once.
    const lossy = lostReplyClient();
    const lossyStore = new DynamoDbKeyJobStore(lossy.client, table);

    // Act
    const acquired = await lossyStore.acquire(ID, 'run-a', NOW, NOW + LEASE);
    await lossyStore.begin(ID, 'run-a', 'key-a', NOW, NOW + LEASE);
    await lossyStore.recordAttempt(ID, 'run-a', NOW, NOW + LEASE);
    await lossyStore.saveReceived(ID, 'run-a', RECEIVED, NOW, NOW + LEASE);
    await lossyStore.markStored(ID, 'run-a', STORED, NOW);
    const stored = await store.get(ID);
    await lossyStore.acquire(ID, 'run-b', NOW, NOW + LEASE);
    await lossyStore.recordFailure(ID, 'run-b', 'upstream_error', NOW, 'stored');
    await lossyStore.acquire(ID, 'run-c', NOW, NOW + LEASE);
    await lossyStore.release(ID, 'run-c');
    const released = await store.get(ID);
    lossy.client.destroy();

    // Assess
    expect(lossy.lost()).toBe(9);
    expect(acquired).toMatchObject({ leaseOwner: 'run-a', leaseUntilMs: NOW + LEASE });
    // Each write applied once: the attempt counted once, one key set counted.
    expect(stored).toMatchObject({ state: 'stored', attempts: 1, issueCount: 1 });
    expect(stored?.leaseOwner).toBeUndefined();
    expect(released).toMatchObject({ state: 'stored', lastError: 'upstream_error' });
    expect(released?.leaseOwner).toBeUndefined();
  });
});
