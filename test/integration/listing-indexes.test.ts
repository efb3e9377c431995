/**
 * The two listing indexes on DynamoDB Local, the only way refresh and admin
 * list items (their roles may not Scan the table): what each index holds,
 * what it leaves out, items written before it existed, and the scheduled
 * refresh and admin status reading through them.
 */
import { randomUUID } from 'node:crypto';
import {
  CreateTableCommand,
  DescribeTableCommand,
  GetItemCommand,
  PutItemCommand,
  ScanCommand,
} from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoDbKeyJobIndex } from '../../functions/adapters/dynamodb-key-job-index.js';
import { DynamoDbKeyJobStore } from '../../functions/adapters/dynamodb-key-job-store.js';
import { DynamoDbTokenStore } from '../../functions/adapters/dynamodb-token-store.js';
import { createAdmin } from '../../functions/admin/admin.js';
import type { StatusReport } from '../../functions/admin/status.js';
import { fixedPolicy } from '../../functions/core/policy-source.js';
import { runScheduledRefresh } from '../../functions/refresh/scheduled-refresh.js';
import { ensureTable } from '../../local/table.js';
import { TestClock } from '../support/clock.js';
import { useSimulatorAndTable } from '../support/simulator-and-table.js';
import { makeInstance, quietLogger, TEST_POLICY, urlEvent, vend } from '../support/vend-harness.js';

const shared = useSimulatorAndTable();

const TOKEN = {
  sealed: Uint8Array.of(1, 2, 3),
  tokenType: 'Bearer' as const,
  issuedAt: 1_800_000_000,
  expiresAt: 1_800_007_200,
  credentialsVersion: 'v1',
};

async function scanIndex(name: string) {
  const out = await shared.client.send(
    new ScanCommand({ TableName: shared.table, IndexName: name }),
  );
  return out.Items ?? [];
}

/** A key job holding an Idempotency-Key and a sealed answer waiting to be stored. */
async function receivedKeyJob(id: string, nowMs: number) {
  const jobs = new DynamoDbKeyJobStore(shared.client, shared.table);
  await jobs.acquire(id, 'run-1', nowMs, nowMs + 60_000);
  await jobs.begin(id, 'run-1', 'idem-key-1', nowMs, nowMs + 60_000);
  await jobs.saveReceived(
    id,
    'run-1',
    { blob: Uint8Array.of(9, 9), encoding: 'utf8', status: 201 },
    nowMs,
    nowMs + 60_000,
  );
}

describe('listing indexes (DynamoDB Local)', () => {
  it('lists every token item in the token index and every key job in the key-jobs index, each apart', async () => {
    const store = new DynamoDbTokenStore(shared.client, shared.table);
    await store.tryAcquireLease('TOKEN#ba_demo_1', 'i-1', 1000, 11_000);
    await store.putToken('TOKEN#ba_demo_1', TOKEN, 'i-1');
    await store.tryAcquireLease('TOKEN#~unscoped', 'i-1', 1000, 11_000);
    await store.leaseIfAbsent('TOKEN#ba_demo_2', 'i-1', 1000, 11_000);
    await receivedKeyJob('ba_demo_1', 1000);

    const tokens = await scanIndex('tokens');
    const keyJobs = await scanIndex('key-jobs');

    expect(tokens.map((i) => i.pk?.S).sort()).toEqual([
      'TOKEN#ba_demo_1',
      'TOKEN#ba_demo_2',
      'TOKEN#~unscoped',
    ]);
    expect(keyJobs.map((i) => i.pk?.S)).toEqual(['KEYS#ba_demo_1']);
  });

  it("keeps a key job's Idempotency-Key and sealed answer out of the key-jobs index, and says an answer waits", async () => {
    await receivedKeyJob('ba_demo_1', 1000);
    const stored = await shared.client.send(
      new GetItemCommand({ TableName: shared.table, Key: { pk: { S: 'KEYS#ba_demo_1' } } }),
    );

    const [indexed] = await scanIndex('key-jobs');
    const listed = await new DynamoDbKeyJobIndex(shared.client, shared.table).list();

    expect(Object.keys(stored.Item ?? {})).toEqual(
      expect.arrayContaining(['idempotency_key', 'sealed_response', 'write_id']),
    );
    expect(Object.keys(indexed ?? {}).sort()).toEqual(
      ['attempts', 'business_application_id', 'issue_count', 'lease_until', 'pk']
        .concat(['sealed_encoding', 'state'])
        .sort(),
    );
    expect(listed).toEqual([
      {
        businessApplicationId: 'ba_demo_1',
        state: 'received',
        attempts: 0,
        issueCount: 0,
        leaseUntilMs: 61_000,
        awaitingStore: true,
      },
    ]);
  });

  it('lists a token item written before the index existed once a use mark or lease touches it', async () => {
    // An item as an earlier version wrote it: no token_pk
    await shared.client.send(
      new PutItemCommand({
        TableName: shared.table,
        Item: { pk: { S: 'TOKEN#ba_demo_2' }, expires_at: { N: '1800007200' } },
      }),
    );
    const store = new DynamoDbTokenStore(shared.client, shared.table);
    const before = await store.list();

    await store.markUsed('TOKEN#ba_demo_2', 1_800_000_100);
    const after = await store.list();

    expect(before).toEqual([]);
    expect(after.map((item) => [item.pk, item.lastUsedAt])).toEqual([
      ['TOKEN#ba_demo_2', 1_800_000_100],
    ]);
  });

  it('lets the scheduled refresh and admin status find what vends cached and key jobs recorded', async () => {
    const clock = new TestClock({ virtualSleep: true, frozenAt: 1_800_000_000_500 });
    const instance = makeInstance({
      sim: shared.sim,
      clock,
      client: shared.client,
      table: shared.table,
    });
    const store = new DynamoDbTokenStore(shared.client, shared.table);
    await vend(instance, urlEvent({ query: 'scope=ba_demo_1' }));
    await receivedKeyJob('ba_demo_2', clock.now());
    const admin = createAdmin({
      store,
      jobs: new DynamoDbKeyJobIndex(shared.client, shared.table),
      refresh: () => Promise.reject(new Error('not used')),
      issueKeys: () => Promise.reject(new Error('not used')),
      clearPendingKey: () => Promise.reject(new Error('not used')),
      policy: fixedPolicy(TEST_POLICY),
      inUseWindowSeconds: 3600,
      clock,
      logger: quietLogger(),
    });

    const report = await runScheduledRefresh(
      { tokens: instance.tokens, store, clock, logger: quietLogger() },
      { inUseWindowSeconds: 3600, dueWithinSeconds: 600, scopes: new Set(['ba_demo_1']) },
    );
    const status = (await admin({ action: 'status' })) as StatusReport;

    expect(report.fresh).toEqual(['ba_demo_1']);
    expect(status.tokens.map((t) => [t.scope, t.state])).toEqual([['ba_demo_1', 'valid']]);
    expect(status.key_jobs).toEqual([
      expect.objectContaining({
        business_application_id: 'ba_demo_2',
        state: 'received',
        awaiting_store: true,
      }),
    ]);
    expect(JSON.stringify(status)).not.toContain('idem-key-1');
  });

  it('gives a local table made before the indexes both of them, and keeps one that has them', async () => {
    const name = `test-${randomUUID()}`;
    await shared.client.send(
      new CreateTableCommand({
        TableName: name,
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );

    await ensureTable(shared.client, name, { ttl: false });
    await ensureTable(shared.client, name, { ttl: false });

    const { Table } = await shared.client.send(new DescribeTableCommand({ TableName: name }));
    expect(
      (Table?.GlobalSecondaryIndexes ?? []).map((i) => [i.IndexName, i.IndexStatus]).sort(),
    ).toEqual([
      ['key-jobs', 'ACTIVE'],
      ['tokens', 'ACTIVE'],
    ]);
  }, 60_000); // two index creations, each awaited until ACTIVE
});
