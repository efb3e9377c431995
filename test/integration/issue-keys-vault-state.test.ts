/**
 * What the job does with a secret it cannot write now: Secrets Manager takes
 * no new version of a secret scheduled for deletion. Nothing may be issued
 * then: the id fails `key_vault_unavailable` and the log says why.
 */
import { describe, expect, it } from 'vitest';
import { KeyIssuingFailedError } from '../../functions/issue-keys/errors.js';
import { keyJobRecord, useSecretsManagerKeyJobs } from '../support/key-job-harness.js';
import { rejection } from '../support/rejection.js';

const kj = useSecretsManagerKeyJobs('tvm-test');

const ID = 'ba_demo_1';
const SECRET = `tvm-test/basic-auth/${ID}`;
const keySetsIssued = () => kj.h.sim.stats.keysIssued;

describe('a secret scheduled for deletion', () => {
  it('regression: a forced reissue issues no key set it could not store, and fails key_vault_unavailable', async () => {
    // Prepare: keys stored, then the secret scheduled for deletion.
    await kj.h.job().handle({});
    kj.secrets.deleting.add(SECRET);
    const job = kj.h.job();

    // Act
    const error = await rejection(
      job.handle({ businessApplicationIds: [ID], force: true }, { requestId: 'r1' }),
      KeyIssuingFailedError,
    );

    // Assess: one key set in all (the first run's); the stored keys stay as they were.
    expect(error.result.failed).toEqual([{ id: ID, code: 'key_vault_unavailable' }]);
    expect(keySetsIssued()).toBe(1);
    const record = await keyJobRecord(kj.h, ID);
    expect(record.state?.S).toBe('stored');
    expect(record.sealed_response).toBeUndefined();
    expect(job.logger.entries()).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        extra: expect.objectContaining({
          code: 'key_vault_unavailable',
          detail: expect.stringContaining('scheduled for deletion'),
        }),
      }),
    );
  });

  it('regression: a pending issue is not finished at the provider while its secret cannot take it', async () => {
    // Prepare: an issue left pending by a provider outage; then the secret (made by hand) is scheduled for deletion.
    kj.h.sim.injectKeysFault({ kind: 'status', status: 503 }, 3);
    await rejection(kj.h.job().handle({}), KeyIssuingFailedError);
    expect((await keyJobRecord(kj.h, ID)).state?.S).toBe('pending');
    kj.secrets.secrets.set(SECRET, { current: 'v0', versions: new Map([['v0', '{}']]) });
    kj.secrets.deleting.add(SECRET);

    // Act
    const error = await rejection(kj.h.job().handle({}), KeyIssuingFailedError);
    kj.secrets.deleting.delete(SECRET); // restored
    const restored = await kj.h.job().handle({});

    // Assess: the pending key is kept and used once the secret takes versions again.
    expect(error.result.failed).toEqual([{ id: ID, code: 'key_vault_unavailable' }]);
    expect(restored.issued).toEqual([ID]);
    expect(keySetsIssued()).toBe(1);
  });
});
