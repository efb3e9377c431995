/**
 * The key-issuing job (docs/operations.md) end to end: DynamoDB Local for the job
 * records, the provider simulator over loopback, the client library through the
 * SigV4-checking local Function URL, Secrets Manager as a stateful fake behind
 * aws-sdk-client-mock. Time is a test clock: backoff never really waits.
 */
import { DeleteItemCommand } from '@aws-sdk/client-dynamodb';
import { CreateSecretCommand, PutSecretValueCommand } from '@aws-sdk/client-secrets-manager';
import { describe, expect, it } from 'vitest';
import { DynamoDbKeyJobStore } from '../../functions/adapters/dynamodb-key-job-store.js';
import { KeyIssuingFailedError } from '../../functions/issue-keys/errors.js';
import { keyJobRecord, useSecretsManagerKeyJobs } from '../support/key-job-harness.js';
import { lostReplyClient } from '../support/lost-reply-client.js';
import { rejection } from '../support/rejection.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const PREFIX = 'tvm-test';
const secretName = (id: string) => `${PREFIX}/basic-auth/${id}`;

const kj = useSecretsManagerKeyJobs(PREFIX);

const keysSent = (id?: string) =>
  kj.h.sent.filter((r) => r.url.endsWith(id === undefined ? '/keys' : `/${id}/keys`));
const idempotencyKeys = (id?: string) => keysSent(id).map((r) => r.headers['idempotency-key']);

const record = (id: string) => keyJobRecord(kj.h, id);

const failure = (promise: Promise<unknown>) => rejection(promise, KeyIssuingFailedError);

describe('issuing', () => {
  it('first issue: one POST with the unscoped token and a UUID key, the answer stored whole', async () => {
    // Prepare
    const job = kj.h.job();

    // Act
    const result = await job.handle({});

    // Assess
    expect(result).toEqual({ issued: ['ba_demo_1'], skipped: [], failed: [] });
    const [request] = keysSent();
    expect(keysSent()).toHaveLength(1);
    expect(request).toMatchObject({
      url: `${kj.h.sim.url}/partner/v1/basic_auth/business_applications/ba_demo_1/keys`,
      method: 'POST',
      redirect: 'manual',
    });
    expect(request?.headers.authorization).toMatch(/^Bearer sim_/);
    expect(request?.headers['idempotency-key']).toMatch(UUID);
    expect(request?.headers.accept).toBe('application/json');
    expect(request?.headers['content-type']).toBeUndefined();
    expect(request?.body).toBeUndefined();
    expect(kj.h.sim.stats.tokenRequestsByScope).toEqual({ '': 1 });
    // Stored byte for byte, under the idempotency key as ClientRequestToken.
    const answer = kj.h.answers[0];
    expect(answer?.status).toBe(201);
    expect(kj.secrets.value(secretName('ba_demo_1'))).toBe(answer?.body);
    expect(kj.sm.commandCalls(CreateSecretCommand)[0]?.args[0].input).toMatchObject({
      Name: secretName('ba_demo_1'),
      ClientRequestToken: request?.headers['idempotency-key'],
      SecretString: answer?.body,
    });
    const item = await record('ba_demo_1');
    expect(item).toMatchObject({
      state: { S: 'stored' },
      business_application_id: { S: 'ba_demo_1' },
      secret_name: { S: secretName('ba_demo_1') },
      secret_version: { S: request?.headers['idempotency-key'] },
      response_status: { N: '201' },
      issue_count: { N: '1' },
      attempts: { N: '1' },
    });
    for (const gone of [
      'idempotency_key',
      'sealed_response',
      'lease_owner',
      'lease_until',
      'ttl',
    ]) {
      expect(item[gone]).toBeUndefined();
    }
    expect(Number(item.stored_at?.N)).toBe(Math.floor(kj.h.clock.now() / 1000));
    expect(job.metrics).toEqual(['KeyIssuingRuns', 'KeysEndpointRequests', 'KeysIssued']);
  });

  it('skips an id whose keys are stored, without calling the provider', async () => {
    // Prepare
    await kj.h.job().handle({});

    // Act
    const job = kj.h.job();
    const result = await job.handle({});

    // Assess
    expect(result).toEqual({ issued: [], skipped: ['ba_demo_1'], failed: [] });
    expect(keysSent()).toHaveLength(1);
    expect(kj.h.sim.stats.keysIssued).toBe(1);
    expect(job.metrics).toEqual(['KeyIssuingRuns', 'KeysSkipped']);
  });

  it('skips an id whose keys are stored though its job record is gone, without calling the provider', async () => {
    // Prepare: keys stored, then the record lost (a recreated table).
    await kj.h.job().handle({});
    const stored = kj.secrets.value(secretName('ba_demo_1'));
    await kj.h.ddb.send(
      new DeleteItemCommand({ TableName: kj.h.table, Key: { pk: { S: 'KEYS#ba_demo_1' } } }),
    );

    // Act
    const result = await kj.h.job().handle({});

    // Assess
    expect(result).toEqual({ issued: [], skipped: ['ba_demo_1'], failed: [] });
    expect(keysSent()).toHaveLength(1);
    expect(kj.secrets.value(secretName('ba_demo_1'))).toBe(stored);
  });

  it('skips stored keys after the record was lost and a forced reissue was then refused', async () => {
    // Prepare: keys stored, record lost, a forced reissue refused (403): a
    // rejected record that never stored anything.
    await kj.h.job().handle({});
    const stored = kj.secrets.value(secretName('ba_demo_1'));
    await kj.h.ddb.send(
      new DeleteItemCommand({ TableName: kj.h.table, Key: { pk: { S: 'KEYS#ba_demo_1' } } }),
    );
    kj.h.sim.injectKeysFault({ kind: 'status', status: 403 });
    await failure(kj.h.job().handle({ businessApplicationIds: ['ba_demo_1'], force: true }));

    // Act
    const result = await kj.h.job().handle({});

    // Assess
    expect(result).toEqual({ issued: [], skipped: ['ba_demo_1'], failed: [] });
    expect(kj.secrets.value(secretName('ba_demo_1'))).toBe(stored);
  });

  it('a forced reissue does not ask the vault: it issues even over stored keys without a record', async () => {
    await kj.h.job().handle({});
    await kj.h.ddb.send(
      new DeleteItemCommand({ TableName: kj.h.table, Key: { pk: { S: 'KEYS#ba_demo_1' } } }),
    );

    const result = await kj.h.job().handle({ businessApplicationIds: ['ba_demo_1'], force: true });

    expect(result).toEqual({ issued: ['ba_demo_1'], skipped: [], failed: [] });
    expect(kj.h.sim.stats.keysIssued).toBe(2);
  });

  it('issues nothing for an id without a record when Secrets Manager cannot say whether its keys are stored', async () => {
    kj.secrets.describeFailures = 10;

    const error = await failure(kj.h.job().handle({}));

    expect(error.result.failed).toEqual([{ id: 'ba_demo_1', code: 'key_vault_unavailable' }]);
    expect(keysSent()).toHaveLength(0);
  });

  it('a forced reissue uses a new Idempotency-Key and puts a new secret version', async () => {
    // Prepare
    await kj.h.job().handle({});

    // Act
    const result = await kj.h.job().handle({ businessApplicationIds: ['ba_demo_1'], force: true });

    // Assess
    expect(result).toEqual({ issued: ['ba_demo_1'], skipped: [], failed: [] });
    const [first, second] = idempotencyKeys();
    expect(second).toMatch(UUID);
    expect(second).not.toBe(first);
    expect(kj.h.sim.stats.keysIssued).toBe(2);
    expect(kj.sm.commandCalls(PutSecretValueCommand)[0]?.args[0].input).toMatchObject({
      SecretId: secretName('ba_demo_1'),
      ClientRequestToken: second,
      SecretString: kj.h.answers[1]?.body,
    });
    expect(kj.secrets.value(secretName('ba_demo_1'))).toBe(kj.h.answers[1]?.body);
    expect(kj.h.answers[1]?.body).not.toBe(kj.h.answers[0]?.body);
    expect(await record('ba_demo_1')).toMatchObject({
      issue_count: { N: '2' },
      secret_version: { S: second },
    });
  });

  it('sends KEY_ISSUE_REQUEST_BODY as JSON when configured', async () => {
    // Prepare
    const job = kj.h.job({}, { requestBody: '{"label": "checkout"}' });

    // Act
    await job.handle({});

    // Assess
    expect(keysSent()[0]?.headers['content-type']).toBe('application/json');
    expect(keysSent()[0]?.body).toBe('{"label": "checkout"}');
  });

  it('percent-encodes the id as one path segment', async () => {
    // Prepare
    kj.h.sim.setOptions({ allowedScopes: ['ba:demo.1'] });

    // Act
    const result = await kj.h.job().run({ businessApplicationIds: ['ba:demo.1'] });

    // Assess
    expect(result.issued).toEqual(['ba:demo.1']);
    expect(keysSent()[0]?.url).toBe(
      `${kj.h.sim.url}/partner/v1/basic_auth/business_applications/ba%3Ademo.1/keys`,
    );
    expect(kj.secrets.value(`${PREFIX}/basic-auth/ba@demo.1`)).toBe(kj.h.answers[0]?.body);
  });
});

describe('never losing what the provider issued', () => {
  it('a 500, then success, with the same Idempotency-Key', async () => {
    // Prepare
    kj.h.sim.injectKeysFault({ kind: 'status', status: 500 });
    const job = kj.h.job();

    // Act
    const result = await job.handle({});

    // Assess
    expect(result.issued).toEqual(['ba_demo_1']);
    const keys = kj.h.sim.requests.filter((r) => r.endpoint === 'keys');
    expect(keys.map((r) => r.status)).toEqual([500, 201]);
    expect(new Set(keys.map((r) => r.idempotencyKey)).size).toBe(1);
    expect(keys[0]?.idempotencyKey).toMatch(UUID);
    expect(await record('ba_demo_1')).toMatchObject({ attempts: { N: '2' } });
    expect(job.metrics).toContain('KeysEndpointErrors');
  });

  it('an answer lost after the provider committed: one key set, stored once', async () => {
    // Prepare
    kj.h.sim.injectKeysFault({ kind: 'dropAfterCommit' });

    // Act
    const result = await kj.h.job().handle({});

    // Assess
    expect(result.issued).toEqual(['ba_demo_1']);
    expect(kj.h.sim.stats.keysIssued).toBe(1);
    const keys = kj.h.sim.requests.filter((r) => r.endpoint === 'keys');
    expect(keys).toMatchObject([
      { status: 0, fault: 'dropAfterCommit' },
      { status: 201, idempotencyKey: keys[0]?.idempotencyKey },
    ]);
    expect(kj.sm.commandCalls(CreateSecretCommand)).toHaveLength(1);
    expect(kj.sm.commandCalls(PutSecretValueCommand)).toHaveLength(0);
    expect(kj.secrets.secrets.get(secretName('ba_demo_1'))?.versions.size).toBe(1);
    // The answer received is the provider's replay of the committed (first and only) key set.
    expect(kj.h.answers).toMatchObject([{ status: 201, replayed: true }]);
    expect(kj.secrets.value(secretName('ba_demo_1'))).toBe(kj.h.answers[0]?.body);
  });

  it('a Secrets Manager failure keeps the answer sealed; the next run stores it without the provider', async () => {
    // Prepare
    kj.secrets.failures = 1;
    const first = kj.h.job();

    // Act
    const error = await failure(first.handle({}));
    const pending = await record('ba_demo_1');
    const second = kj.h.job();
    const result = await second.handle({});

    // Assess
    expect(error.result.failed).toEqual([{ id: 'ba_demo_1', code: 'store_failed' }]);
    expect(pending).toMatchObject({
      state: { S: 'received' },
      idempotency_key: { S: idempotencyKeys()[0] },
      last_error: { S: 'store_failed' },
      sealed_encoding: { S: 'utf8' },
      response_status: { N: '201' },
    });
    expect(pending.sealed_response?.B).toBeInstanceOf(Uint8Array);
    expect(result).toEqual({ issued: ['ba_demo_1'], skipped: [], failed: [] });
    expect(kj.h.sim.stats.keyRequests).toBe(1);
    expect(kj.secrets.value(secretName('ba_demo_1'))).toBe(kj.h.answers[0]?.body);
    expect(kj.sm.commandCalls(CreateSecretCommand).at(-1)?.args[0].input.ClientRequestToken).toBe(
      idempotencyKeys()[0],
    );
    const done = await record('ba_demo_1');
    expect(done.state).toEqual({ S: 'stored' });
    expect(done.sealed_response).toBeUndefined();
    expect(done.idempotency_key).toBeUndefined();
    expect(second.metrics).toEqual(['KeyIssuingRuns', 'KeysIssued', 'KeysRecovered']);
  });

  it('a run whose job-record writes all lose their reply once still issues once and says stored (lost-reply defect)', async () => {
    // Prepare: each write reaches DynamoDB, its reply is lost, the SDK resends it.
    const lossy = lostReplyClient();
    const job = kj.h.job({ store: new DynamoDbKeyJobStore(lossy.client, kj.h.table) });

    // Act
    const result = await job.run();
    lossy.client.destroy();

    // Assess
    expect(result).toEqual({ issued: ['ba_demo_1'], skipped: [], failed: [] });
    expect(lossy.lost()).toBeGreaterThanOrEqual(5);
    expect(keysSent()).toHaveLength(1);
    expect(await record('ba_demo_1')).toMatchObject({
      state: { S: 'stored' },
      attempts: { N: '1' },
      issue_count: { N: '1' },
    });
  });

  it('two concurrent runs for one id make one provider call', async () => {
    // Prepare: hold the first keys request until the second run is done
    let arrived!: () => void;
    const reached = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let holding = true;
    kj.h.gate = async (request) => {
      if (!request.url.endsWith('/keys') || !holding) return;
      holding = false;
      arrived();
      await held;
    };

    // Act
    const a = kj.h.job().run();
    await reached;
    const b = await kj.h.job().run();
    release();
    const resultA = await a;

    // Assess
    expect(resultA.issued).toEqual(['ba_demo_1']);
    expect(b).toEqual({
      issued: [],
      skipped: [],
      failed: [{ id: 'ba_demo_1', code: 'job_in_progress' }],
    });
    expect(kj.h.sim.stats.keyRequests).toBe(1);
    expect(kj.h.sim.stats.keysIssued).toBe(1);
  });

  it('takes over a lease that ran out, and leaves a live one alone', async () => {
    // Prepare
    const now = kj.h.clock.now();
    await kj.h.store.acquire('ba_demo_1', 'dead-run', now - 120_000, now - 60_000);
    await kj.h.store.acquire('ba_demo_2', 'live-run', now, now + 60_000);
    const job = kj.h.job({}, { businessApplicationIds: ['ba_demo_1', 'ba_demo_2'] });

    // Act
    const result = await job.run();

    // Assess
    expect(result).toEqual({
      issued: ['ba_demo_1'],
      skipped: [],
      failed: [{ id: 'ba_demo_2', code: 'job_in_progress' }],
    });
    expect(keysSent('ba_demo_2')).toHaveLength(0);
    expect(job.logger.lines.join('\n')).toContain('took over a key job whose run lease ran out');
  });
});
