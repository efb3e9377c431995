/**
 * clear-pending-key: an operator drops a key job's pending Idempotency-Key that
 * can never succeed, through the admin (wired to the job as `npm run admin`
 * wires it) and through the job, with the job records on DynamoDB Local.
 */
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoDbKeyJobIndex } from '../../functions/adapters/dynamodb-key-job-index.js';
import { DynamoDbTokenStore } from '../../functions/adapters/dynamodb-token-store.js';
import { createAdmin } from '../../functions/admin/admin.js';
import { AccessPolicy } from '../../functions/core/access-policy.js';
import { fixedPolicy } from '../../functions/core/policy-source.js';
import type { ClearPendingKeyResult } from '../../functions/issue-keys/clear-pending-key.js';
import {
  InvalidKeyIssuingRequestError,
  PendingKeyNotClearedError,
} from '../../functions/issue-keys/errors.js';
import {
  capturingLogger,
  keyJobRecord,
  useSecretsManagerKeyJobs,
} from '../support/key-job-harness.js';
import { rejection } from '../support/rejection.js';

const kj = useSecretsManagerKeyJobs('tvm-test');

const ID = 'ba_demo_1';
const REASON = 'Provider support confirmed nothing was issued under the key (ticket 4711)';
const clearEvent = (reason = REASON) => ({
  action: 'clear-pending-key',
  businessApplicationId: ID,
  reason,
});
const keysSent = () => kj.h.sent.filter((r) => r.url.endsWith('/keys'));
const record = () => keyJobRecord(kj.h, ID);

/** The admin core wired to the job, as `npm run admin` wires it. */
function admin() {
  const job = kj.h.job();
  const logger = capturingLogger();
  const run = createAdmin({
    store: new DynamoDbTokenStore(kj.h.ddb, kj.h.table),
    jobs: new DynamoDbKeyJobIndex(kj.h.ddb, kj.h.table),
    refresh: async () => Promise.reject(new Error('not used')),
    issueKeys: (event) => job.handle(event),
    clearPendingKey: (request) => job.clearPendingKey({ action: 'clear-pending-key', ...request }),
    policy: fixedPolicy(AccessPolicy.parse('{"scopes":[],"grants":[]}')),
    inUseWindowSeconds: 3600,
    clock: kj.h.clock,
    logger,
  });
  return { run, job, logger };
}

/** A run that the provider answers 409: the id stays pending with its key, run after run. */
async function stuckOn409(options: { force?: boolean } = {}): Promise<string> {
  kj.h.sim.injectKeysFault({ kind: 'status', status: 409 }, 2);
  const run = { businessApplicationIds: [ID], ...(options.force ? { force: true } : {}) };
  const first = await kj.h.job().run(run);
  const second = await kj.h.job().run(run);
  expect([first.failed, second.failed]).toEqual([
    [{ id: ID, code: 'upstream_error' }],
    [{ id: ID, code: 'upstream_error' }],
  ]);
  const key = (await record()).idempotency_key?.S as string;
  expect(
    keysSent()
      .slice(-2)
      .map((r) => r.headers['idempotency-key']),
  ).toEqual([key, key]);
  return key;
}

/**
 * A record written by another version (a release rolled back): a state this one does not
 * know, which it reads as pending, with a pending key and a sealed answer.
 */
async function sealedRecordOfAnotherVersion(): Promise<void> {
  await kj.h.ddb.send(
    new PutItemCommand({
      TableName: kj.h.table,
      Item: {
        pk: { S: `KEYS#${ID}` },
        business_application_id: { S: ID },
        state: { S: 'storing' },
        idempotency_key: { S: 'k1' },
        sealed_response: { B: Uint8Array.of(1, 2, 3) },
        sealed_encoding: { S: 'utf8' },
        attempts: { N: '1' },
      },
    }),
  );
}

describe('clear-pending-key', () => {
  it('drops a pending key the provider keeps refusing; the next run issues with a new key', async () => {
    // Prepare
    const key = await stuckOn409();
    const { run, job } = admin();

    // Act
    const result = (await run(clearEvent())) as ClearPendingKeyResult;
    const cleared = await record();
    const next = await kj.h.job().run();

    // Assess
    expect(result).toEqual({
      business_application_id: ID,
      cleared_idempotency_key: key,
      state: 'rejected',
      note: expect.stringContaining('the next issue-keys run issues them'),
    });
    expect(cleared).toMatchObject({
      state: { S: 'rejected' },
      last_error: { S: 'upstream_error' },
    });
    expect(cleared.idempotency_key).toBeUndefined();
    expect(next.issued).toEqual([ID]);
    const newKey = keysSent().at(-1)?.headers['idempotency-key'];
    expect(newKey).not.toBe(key);
    expect(await record()).toMatchObject({ state: { S: 'stored' }, secret_version: { S: newKey } });
    // Logged with the reason and the cleared key's id.
    expect(job.logger.entries()).toContainEqual(
      expect.objectContaining({
        message: 'pending Idempotency-Key cleared by an operator',
        extra: expect.objectContaining({
          businessApplicationId: ID,
          idempotencyKey: key,
          reason: REASON,
        }),
      }),
    );
  });

  it('after a stuck forced reissue, leaves the stored keys current', async () => {
    // Prepare
    await kj.h.job().run();
    const storedKeys = kj.secrets.value(`tvm-test/basic-auth/${ID}`);
    await stuckOn409({ force: true });

    // Act
    const result = (await admin().run(clearEvent())) as ClearPendingKeyResult;
    const scheduled = await kj.h.job().run();

    // Assess
    expect(result.state).toBe('stored');
    expect(await record()).toMatchObject({ state: { S: 'stored' }, issue_count: { N: '1' } });
    expect(scheduled.skipped).toEqual([ID]);
    expect(kj.secrets.value(`tvm-test/basic-auth/${ID}`)).toBe(storedKeys);
  });

  it('refuses a record holding a sealed answer waiting to be stored: answer_awaiting_store', async () => {
    // Prepare: the keys were issued, but Secrets Manager failed.
    kj.secrets.failures = 1;
    await kj.h.job().run();
    const before = await record();

    // Act
    const error = await rejection(
      kj.h.job().clearPendingKey(clearEvent()),
      PendingKeyNotClearedError,
    );

    // Assess
    expect(error.code).toBe('answer_awaiting_store');
    expect(error.message).toMatch(
      /^answer_awaiting_store: .*would lose the keys the provider issued/,
    );
    expect(error.stack).toBe(`PendingKeyNotClearedError: ${error.message}`);
    expect(before.state).toEqual({ S: 'received' });
    expect(await record()).toEqual(before);
  });

  it('refuses a sealed answer under a state this version does not know: answer_awaiting_store', async () => {
    // Prepare
    await sealedRecordOfAnotherVersion();
    const before = await record();

    // Act
    const error = await rejection(
      kj.h.job().clearPendingKey(clearEvent()),
      PendingKeyNotClearedError,
    );

    // Assess
    expect(error.code).toBe('answer_awaiting_store');
    expect(await record()).toEqual(before);
  });

  it('refuses a job a run holds now: job_in_progress; clears it once the lease ran out', async () => {
    await stuckOn409();
    const now = kj.h.clock.now();
    await kj.h.store.acquire(ID, 'another-run', now, now + 60_000);
    const before = await record();

    // At the lease's very end, it is still held.
    kj.h.clock.advance(60);
    const error = await rejection(
      kj.h.job().clearPendingKey(clearEvent()),
      PendingKeyNotClearedError,
    );
    const whileHeld = await record();
    kj.h.clock.advance(1);
    const later = await kj.h.job().clearPendingKey(clearEvent());

    expect(error.code).toBe('job_in_progress');
    expect(error.message).toContain('a run holds the key job of ba_demo_1 until');
    expect(whileHeld).toEqual(before);
    expect(later.state).toBe('rejected');
  });

  it('refuses an id without a pending key: no_pending_key', async () => {
    const none = await rejection(
      kj.h.job().clearPendingKey(clearEvent()),
      PendingKeyNotClearedError,
    );
    await kj.h.job().run();
    const stored = await rejection(
      kj.h.job().clearPendingKey(clearEvent()),
      PendingKeyNotClearedError,
    );

    expect([none.code, stored.code]).toEqual(['no_pending_key', 'no_pending_key']);
    expect(stored.message).toContain('state stored');
  });

  it('refuses an event without a reason, before reading anything', async () => {
    const job = kj.h.job();

    const error = await rejection(
      job.clearPendingKey({ action: 'clear-pending-key', businessApplicationId: ID }),
      InvalidKeyIssuingRequestError,
    );

    expect(error.message).toContain('reason: required');
    expect(job.metrics).toEqual(['InvalidEvents']);
  });
});

describe('the store: clearPendingKey', () => {
  it('writes only while the record holds that key, no sealed answer and no live lease', async () => {
    // Prepare: a pending key k1, its run gone
    const now = kj.h.clock.now();
    await kj.h.store.acquire(ID, 'run-a', now, now + 60_000);
    await kj.h.store.begin(ID, 'run-a', 'k1', now, now + 60_000, 'force-1');
    const later = now + 60_001;

    // Act
    const otherKey = await kj.h.store.clearPendingKey(ID, 'k2', later, 'rejected');
    const leaseLive = await kj.h.store.clearPendingKey(ID, 'k1', now, 'rejected');
    const cleared = await kj.h.store.clearPendingKey(ID, 'k1', later, 'rejected');

    // Assess
    expect([otherKey, leaseLive, cleared]).toEqual([false, false, true]);
    const after = await kj.h.store.get(ID);
    expect(after).toMatchObject({ state: 'rejected' });
    expect(after?.idempotencyKey).toBeUndefined();
    expect(after?.forceId).toBeUndefined();
  });

  it('never clears the key of a sealed answer waiting to be stored', async () => {
    const now = kj.h.clock.now();
    await kj.h.store.acquire(ID, 'run-a', now, now + 60_000);
    await kj.h.store.begin(ID, 'run-a', 'k1', now, now + 60_000);
    await kj.h.store.saveReceived(
      ID,
      'run-a',
      { blob: Uint8Array.of(1), encoding: 'utf8', status: 201 },
      now,
      now + 60_000,
    );
    await kj.h.store.release(ID, 'run-a');

    expect(await kj.h.store.clearPendingKey(ID, 'k1', now + 1, 'rejected')).toBe(false);
    expect(await kj.h.store.get(ID)).toMatchObject({ state: 'received', idempotencyKey: 'k1' });
  });

  it('never clears the key of a sealed answer, whatever state the record names', async () => {
    await sealedRecordOfAnotherVersion();
    const before = await record();

    expect(await kj.h.store.clearPendingKey(ID, 'k1', kj.h.clock.now(), 'rejected')).toBe(false);
    expect(await record()).toEqual(before);
  });
});
