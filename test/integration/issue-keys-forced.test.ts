/**
 * Forced requests (functions/issue-keys/job.ts, FORCED REQUESTS): a forced
 * request reissues each of its ids at most once, whatever retries run it again.
 */
import { PutSecretValueCommand } from '@aws-sdk/client-secrets-manager';
import { describe, expect, it } from 'vitest';
import { KeyIssuingFailedError } from '../../functions/issue-keys/errors.js';
import { MAX_FORCED_REQUESTS } from '../../functions/issue-keys/ports.js';
import { keyJobRecord, useSecretsManagerKeyJobs } from '../support/key-job-harness.js';
import { rejection } from '../support/rejection.js';

const kj = useSecretsManagerKeyJobs('tvm-test');

const ID = 'ba_demo_1';
const FORCED = { businessApplicationIds: [ID, 'ba_missing'], force: true };
const keySetsIssued = () => kj.h.sim.stats.keysIssued;
const versionsPut = () => kj.sm.commandCalls(PutSecretValueCommand).length;

/** Keys stored for ID by a scheduled run: what a forced request reissues. */
async function stored(): Promise<void> {
  await kj.h.job().handle({});
  expect(keySetsIssued()).toBe(1);
}

describe('a forced request', () => {
  it('retried by Lambda with the same request id reissues each id once (forced-retry defect)', async () => {
    // Prepare: ba_missing fails each time, so the invocation fails and Lambda retries it twice.
    await stored();
    const job = kj.h.job();

    // Act: the invocation and Lambda's two retries, then a new operator action.
    const attempts: KeyIssuingFailedError[] = [];
    for (let i = 0; i < 3; i++) {
      attempts.push(
        await rejection(job.handle(FORCED, { requestId: 'lambda-req-1' }), KeyIssuingFailedError),
      );
    }
    const afterRetries = { keySets: keySetsIssued(), versions: versionsPut() };
    await rejection(job.handle(FORCED, { requestId: 'lambda-req-2' }), KeyIssuingFailedError);

    // Assess
    const missing = [{ id: 'ba_missing', code: 'business_application_not_found' }];
    expect(attempts.map((e) => e.result)).toEqual([
      { issued: [ID], skipped: [], failed: missing },
      { issued: [], skipped: [ID], failed: missing },
      { issued: [], skipped: [ID], failed: missing },
    ]);
    expect(afterRetries).toEqual({ keySets: 2, versions: 1 });
    expect(keySetsIssued()).toBe(3);
    expect(versionsPut()).toBe(2);
    expect(job.logger.lines.join('\n')).toContain(
      'keys already reissued for this forced request (a retry of it); skipped',
    );
  });

  it('names its own identity with forceId: repeating the event reissues nothing more', async () => {
    await stored();
    const event = { businessApplicationIds: [ID], force: true, forceId: 'CHG-1234' };

    const first = await kj.h.job().handle(event, { requestId: 'console-1' });
    const again = await kj.h.job().handle(event, { requestId: 'console-2' });

    expect(first).toEqual({ issued: [ID], skipped: [], failed: [] });
    expect(again).toEqual({ issued: [], skipped: [ID], failed: [] });
    expect(keySetsIssued()).toBe(2);
  });

  it('without an identity is this run alone: every forced run reissues', async () => {
    await stored();

    await kj.h.job().run({ businessApplicationIds: [ID], force: true });
    await kj.h.job().run({ businessApplicationIds: [ID], force: true });

    expect(keySetsIssued()).toBe(3);
  });

  it('left pending, then finished by a scheduled run, is done: its retry reissues nothing', async () => {
    // Prepare: the forced issue fails with 503s and stays pending with its key.
    await stored();
    kj.h.sim.injectKeysFault({ kind: 'status', status: 503 }, 3);
    const forced = { businessApplicationIds: [ID], force: true };
    await rejection(kj.h.job().handle(forced, { requestId: 'req-1' }), KeyIssuingFailedError);
    const pending = await keyJobRecord(kj.h, ID);

    // Act: the schedule finishes the pending issue; then Lambda retries the forced request.
    const scheduled = await kj.h.job().handle({});
    const retry = await kj.h.job().handle(forced, { requestId: 'req-1' });

    // Assess
    expect(pending).toMatchObject({ state: { S: 'pending' }, force_id: { S: 'req-1' } });
    expect(scheduled.issued).toEqual([ID]);
    expect(retry).toEqual({ issued: [], skipped: [ID], failed: [] });
    expect(keySetsIssued()).toBe(2);
    expect((await keyJobRecord(kj.h, ID)).force_id).toBeUndefined();
  });

  it(`is remembered among the latest ${MAX_FORCED_REQUESTS} forced requests of its id`, async () => {
    await stored();
    const forced = (forceId: string) =>
      kj.h.job().run({ businessApplicationIds: [ID], force: true, forceId });
    for (let i = 0; i <= MAX_FORCED_REQUESTS; i++) await forced(`req-${i}`);
    const issued = keySetsIssued();

    const latest = await forced(`req-1`);
    const forgotten = await forced(`req-0`);

    expect(issued).toBe(MAX_FORCED_REQUESTS + 2);
    expect(latest.skipped).toEqual([ID]);
    expect(forgotten.issued).toEqual([ID]);
  });
});

describe('the forceId of an event', () => {
  it.each([
    [{ businessApplicationIds: [ID], forceId: 'CHG-1' }, 'forceId needs "force": true'],
    [{ businessApplicationIds: [ID], force: true, forceId: '' }, 'forceId: expected'],
    [{ businessApplicationIds: [ID], force: true, forceId: 'a b' }, 'forceId: expected'],
  ])('%j is refused', async (event, problem) => {
    const error = await rejection(kj.h.job().handle(event), Error);

    expect(error).toMatchObject({ code: 'invalid_request' });
    expect(error.message).toContain(problem);
    expect(kj.h.sent).toHaveLength(0);
  });
});
