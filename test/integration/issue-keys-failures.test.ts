/**
 * How the key-issuing job fails: each code, what it retries, what the job
 * record keeps for the next run, and that a run fails only after every id.
 */
import { describe, expect, it } from 'vitest';
import { DynamoDbKeyJobStore } from '../../functions/adapters/dynamodb-key-job-store.js';
import {
  InvalidKeyIssuingRequestError,
  KeyIssuingFailedError,
} from '../../functions/issue-keys/errors.js';
import { keyJobRecord, UNGRANTED, useSecretsManagerKeyJobs } from '../support/key-job-harness.js';
import { lostReplyClient } from '../support/lost-reply-client.js';
import { rejection } from '../support/rejection.js';

const kj = useSecretsManagerKeyJobs('tvm-test');

const keysSent = () => kj.h.sent.filter((r) => r.url.endsWith('/keys'));

const record = (id: string) => keyJobRecord(kj.h, id);

describe('provider refusals', () => {
  it('403 is feature_not_enabled: no retry, and the next run starts with a new key', async () => {
    // Prepare
    kj.h.sim.setOptions({ keyIssuingEnabled: false });

    // Act
    const error = await rejection(kj.h.job().handle({}), KeyIssuingFailedError);
    const refused = await record('ba_demo_1');
    kj.h.sim.setOptions({ keyIssuingEnabled: true });
    const later = await kj.h.job().handle({});

    // Assess
    expect(error.result.failed).toEqual([{ id: 'ba_demo_1', code: 'feature_not_enabled' }]);
    expect(error.message).toBe(
      'key_issuing_failed: 1 of 1 business applications failed: ba_demo_1 (feature_not_enabled)',
    );
    expect(refused).toMatchObject({
      state: { S: 'rejected' },
      last_error: { S: 'feature_not_enabled' },
    });
    expect(refused.idempotency_key).toBeUndefined();
    expect(later.issued).toEqual(['ba_demo_1']);
    // Attempts count under the new key only.
    expect(await record('ba_demo_1')).toMatchObject({ attempts: { N: '1' } });
    const [first, second] = keysSent().map((r) => r.headers['idempotency-key']);
    expect(keysSent()).toHaveLength(2);
    expect(second).not.toBe(first);
  });

  it('a refused forced reissue leaves the stored keys current', async () => {
    // Prepare
    await kj.h.job().handle({});
    kj.h.sim.setOptions({ keyIssuingEnabled: false });

    // Act
    const forced = await kj.h.job().run({ businessApplicationIds: ['ba_demo_1'], force: true });
    const scheduled = await kj.h.job().run();

    // Assess
    expect(forced.failed).toEqual([{ id: 'ba_demo_1', code: 'feature_not_enabled' }]);
    expect(await record('ba_demo_1')).toMatchObject({
      state: { S: 'stored' },
      last_error: { S: 'feature_not_enabled' },
    });
    expect(scheduled.skipped).toEqual(['ba_demo_1']);
    expect(kj.secrets.value('tvm-test/basic-auth/ba_demo_1')).toBe(kj.h.answers[0]?.body);
  });

  it('a partial failure fails the invocation after every id was processed', async () => {
    // Prepare
    const job = kj.h.job({}, { businessApplicationIds: ['ba_demo_1', 'ba_unknown', 'ba_demo_2'] });

    // Act
    const error = await rejection(job.handle({}), KeyIssuingFailedError);

    // Assess
    expect(error).toMatchObject({ name: 'KeyIssuingFailedError', code: 'key_issuing_failed' });
    expect(error.result).toEqual({
      issued: ['ba_demo_1', 'ba_demo_2'],
      skipped: [],
      failed: [{ id: 'ba_unknown', code: 'business_application_not_found' }],
    });
    expect(error.message).toContain('ba_unknown (business_application_not_found)');
    expect(error.stack).toBe(`KeyIssuingFailedError: ${error.message}`);
    expect(kj.h.sim.stats.keysIssued).toBe(2);
    expect(keysSent()).toHaveLength(3);
  });
});

describe('the job store', () => {
  it('a DynamoDB failure as the issue starts: job_store_unavailable, recorded on the job, which is released', async () => {
    // Prepare: the write that sets the Idempotency-Key never reaches DynamoDB.
    const down = lostReplyClient({
      losing: false,
      unavailableFor: (input) =>
        input.UpdateExpression?.includes('idempotency_key = :key') ?? false,
    });
    const job = kj.h.job({ store: new DynamoDbKeyJobStore(down.client, kj.h.table) });

    // Act
    const result = await job.run();
    down.client.destroy();
    const sentBefore = keysSent().length;
    const after = await record('ba_demo_1');
    const next = await kj.h.job().run();

    // Assess
    expect(result.failed).toEqual([{ id: 'ba_demo_1', code: 'job_store_unavailable' }]);
    expect(sentBefore).toBe(0);
    expect(after).toMatchObject({ last_error: { S: 'job_store_unavailable' } });
    expect(after.lease_owner).toBeUndefined();
    expect(next.issued).toEqual(['ba_demo_1']);
  });
});

describe('retries', () => {
  it('429 / 5xx are retried with the same key, then left pending for the next run', async () => {
    // Prepare
    kj.h.sim.injectKeysFault({ kind: 'status', status: 503 }, 3);
    const started = kj.h.clock.now();

    // Act
    const error = await rejection(kj.h.job({ random: () => 1 }).handle({}), KeyIssuingFailedError);
    const waited = kj.h.clock.now() - started;
    const pending = await record('ba_demo_1');
    const next = await kj.h.job().handle({});

    // Assess
    expect(error.result.failed).toEqual([{ id: 'ba_demo_1', code: 'upstream_unavailable' }]);
    expect(pending).toMatchObject({ state: { S: 'pending' }, attempts: { N: '3' } });
    const keys = keysSent().map((r) => r.headers['idempotency-key']);
    expect(keys).toHaveLength(4);
    expect(new Set(keys).size).toBe(1);
    expect(pending.idempotency_key).toEqual({ S: keys[0] });
    expect(next.issued).toEqual(['ba_demo_1']);
    // Backoff (500 ms, then 1000 ms, with jitter at its top) passed on the injected clock.
    expect(waited).toBeGreaterThanOrEqual(1500);
  });

  it('backs off base x 2^retry with full jitter: exactly the sleeps the random source asks for', async () => {
    // Prepare: two 503s, then success; jitter fixed at 0.5 of each step
    kj.h.sim.injectKeysFault({ kind: 'status', status: 503 }, 2);
    const sleeps: number[] = [];
    const sleep = kj.h.clock.sleep.bind(kj.h.clock);
    kj.h.clock.sleep = async (ms: number) => {
      sleeps.push(ms);
      await sleep(ms);
    };

    // Act
    const result = await kj.h.job({ random: () => 0.5 }, { backoffBaseMs: 400 }).run();

    // Assess: 0.5 x 400 x 2^0, then 0.5 x 400 x 2^1
    expect(result.issued).toEqual(['ba_demo_1']);
    expect(sleeps).toEqual([200, 400]);
  });

  it('honours a short Retry-After and gives up this run on a long one', async () => {
    // Prepare
    kj.h.sim.injectKeysFault({ kind: 'status', status: 429, retryAfter: 3 });
    kj.h.sim.injectKeysFault({ kind: 'status', status: 429, retryAfter: 120 });
    const before = kj.h.clock.now();

    // Act
    const result = await kj.h.job().run();

    // Assess
    expect(result.failed).toEqual([{ id: 'ba_demo_1', code: 'upstream_unavailable' }]);
    expect(keysSent()).toHaveLength(2);
    expect(kj.h.clock.now() - before).toBeGreaterThanOrEqual(3000);
    expect(kj.h.clock.now() - before).toBeLessThan(120_000);
  });

  it('a timeout is retried with the same key', async () => {
    // Prepare
    kj.h.sim.injectKeysFault({ kind: 'hang' });
    const job = kj.h.job({}, { timeoutMs: 200 });

    // Act
    const result = await job.run();

    // Assess
    expect(result.issued).toEqual(['ba_demo_1']);
    const keys = keysSent().map((r) => r.headers['idempotency-key']);
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
  });
});

describe('the unscoped token', () => {
  it('401: forgets the cached token, fetches a fresh one once and retries', async () => {
    // Prepare: a first run caches the token; 4000 s later it has 3200 s left and is revoked
    const job = kj.h.job({}, { businessApplicationIds: ['ba_demo_1', 'ba_demo_2'] });
    await job.run({ businessApplicationIds: ['ba_demo_1'] });
    kj.h.clock.advance(4000);
    kj.h.sim.revokeTokens();

    // Act
    const result = await job.run({ businessApplicationIds: ['ba_demo_2'] });

    // Assess
    expect(result.issued).toEqual(['ba_demo_2']);
    const sent = keysSent().filter((r) => r.url.includes('/ba_demo_2/'));
    expect(sent).toHaveLength(2);
    expect(sent[1]?.headers.authorization).not.toBe(sent[0]?.headers.authorization);
    expect(sent[1]?.headers['idempotency-key']).toBe(sent[0]?.headers['idempotency-key']);
    expect(kj.h.sim.stats.tokensIssued).toBe(2);
    expect(job.logger.lines.join('\n')).toContain('"tokenChanged":true');
  });

  it('401 for a revoked token with 7200 s left: the retry names it, gets a new token and succeeds', async () => {
    // Regression (fault matrix): the vend cache served the revoked token again,
    // since it had more than any min_ttl left, and the id failed token_rejected.
    const job = kj.h.job();
    await kj.h.tokens().getToken();
    kj.h.sim.revokeTokens();

    // Act
    const result = await job.run();

    // Assess
    expect(result.issued).toEqual(['ba_demo_1']);
    const sent = keysSent();
    expect(sent).toHaveLength(2);
    expect(sent[1]?.headers.authorization).not.toBe(sent[0]?.headers.authorization);
    expect(kj.h.sim.stats.tokensIssued).toBe(2);
  });

  it('401 again with the refreshed token is token_rejected after exactly one retry', async () => {
    // Prepare: the provider refuses every token for the keys endpoint
    const job = kj.h.job();
    kj.h.sim.injectKeysFault({ kind: 'status', status: 401 }, 2);

    // Act
    const result = await job.run();

    // Assess
    expect(result.failed).toEqual([{ id: 'ba_demo_1', code: 'token_rejected' }]);
    expect(keysSent()).toHaveLength(2);
    expect(await record('ba_demo_1')).toMatchObject({
      state: { S: 'pending' },
      last_error: { S: 'token_rejected' },
    });
  });

  it('a token fetch failure fails the id with the client code, before any keys request', async () => {
    // Prepare
    const job = kj.h.job({ tokens: kj.h.tokens(UNGRANTED) });

    // Act
    const result = await job.run();

    // Assess
    expect(result.failed).toEqual([{ id: 'ba_demo_1', code: 'access_denied' }]);
    expect(keysSent()).toHaveLength(0);
  });
});

describe('requests', () => {
  it('a bad event is invalid_request listing the expected fields, with no stack trace', async () => {
    // Prepare
    const job = kj.h.job();

    // Act
    const error = await rejection(
      job.handle({ businessApplicationId: ['ba_demo_1'], force: 'yes' }),
      InvalidKeyIssuingRequestError,
    );

    // Assess
    expect(error.code).toBe('invalid_request');
    expect(error.message).toMatch(/^invalid_request: bad key-issuing event/);
    expect(error.message).toContain('unknown field "businessApplicationId"');
    expect(error.message).toContain('force: expected boolean');
    expect(error.message).toContain('"businessApplicationIds"?');
    expect(error.stack).not.toMatch(/\n\s+at /);
    expect(kj.h.sent).toHaveLength(0);
  });

  it('an id outside the scope pattern fails with invalid_request and is never sent', async () => {
    // Prepare
    const job = kj.h.job({}, { businessApplicationIds: ['../etc', 'ba_demo_1'] });

    // Act
    const result = await job.run();

    // Assess
    expect(result).toEqual({
      issued: ['ba_demo_1'],
      skipped: [],
      failed: [{ id: '../etc', code: 'invalid_request' }],
    });
    expect(keysSent()).toHaveLength(1);
  });

  it('an id is not started at its deadline either', async () => {
    const job = kj.h.job();

    const result = await job.run({ deadlineMs: kj.h.clock.now() });

    expect(result.failed).toEqual([{ id: 'ba_demo_1', code: 'not_attempted' }]);
    expect(kj.h.sent).toHaveLength(0);
  });

  it('an id named twice in one event is processed once', async () => {
    const job = kj.h.job();

    const result = await job.handle({ businessApplicationIds: ['ba_demo_1', 'ba_demo_1'] });

    expect(result).toEqual({ issued: ['ba_demo_1'], skipped: [], failed: [] });
    expect(keysSent()).toHaveLength(1);
    expect(job.metrics.filter((m) => m.startsWith('Keys') && m !== 'KeysEndpointRequests')).toEqual(
      ['KeysIssued'],
    );
  });

  it('ids after the deadline are not started', async () => {
    // Prepare
    const job = kj.h.job({}, { businessApplicationIds: ['ba_demo_1', 'ba_demo_2'] });

    // Act
    const result = await job.run({ deadlineMs: kj.h.clock.now() - 1 });

    // Assess
    expect(result.failed).toEqual([
      { id: 'ba_demo_1', code: 'not_attempted' },
      { id: 'ba_demo_2', code: 'not_attempted' },
    ]);
    expect(kj.h.sent).toHaveLength(0);
  });
});
