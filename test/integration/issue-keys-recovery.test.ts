/**
 * A provider answer kept sealed in the job record, waiting to be stored: what
 * runs do with it when it cannot be unsealed (locally, a sealed copy from
 * before a restart: the sealing key is made at each start), and that nothing
 * ever drops its Idempotency-Key.
 */
import { CreateSecretCommand } from '@aws-sdk/client-secrets-manager';
import { describe, expect, it } from 'vitest';
import { AesGcmSealer } from '../../functions/adapters/sealers.js';
import { SealerUnavailableError } from '../../functions/core/errors.js';
import { keyJobRecord, useSecretsManagerKeyJobs } from '../support/key-job-harness.js';

const kj = useSecretsManagerKeyJobs('tvm-test');

const ID = 'ba_demo_1';
const SECRET = `tvm-test/basic-auth/${ID}`;
const keysSent = () => kj.h.sent.filter((r) => r.url.endsWith('/keys'));
const record = () => keyJobRecord(kj.h, ID);

/**
 * Keys issued, Secrets Manager down: the answer is kept sealed under the
 * harness's sealer. Returns the kept record; later runs get another sealer.
 */
async function sealedAnswerKept() {
  kj.secrets.failures = 1;
  const first = await kj.h.job().run();
  expect(first.failed).toEqual([{ id: ID, code: 'store_failed' }]);
  const kept = await record();
  expect(kept).toMatchObject({
    state: { S: 'received' },
    idempotency_key: { S: expect.any(String) },
  });
  return kept;
}

/** The record still holds the sealed answer and its key, names `code` as its last error, and no run holds it. */
async function expectKeptAndReleased(
  kept: Awaited<ReturnType<typeof record>>,
  code: string,
): Promise<void> {
  const after = await record();
  expect(after).toMatchObject({
    state: { S: 'received' },
    idempotency_key: kept.idempotency_key,
    sealed_response: kept.sealed_response,
    last_error: { S: code },
  });
  expect(after.lease_owner).toBeUndefined();
}

/** A job whose sealer cannot open what the harness's sealed (another key). */
const restartedJob = () => kj.h.job({ sealer: new AesGcmSealer() });

describe('a sealed answer', () => {
  it('of bytes that are not UTF-8 is stored byte for byte by the next run, without the provider', async () => {
    // Prepare: a provider answering bytes that are not UTF-8; Secrets Manager down once.
    const bytes = Uint8Array.of(0xff, 0xfe, 0x00, 0x41, 0x80);
    const binary: typeof fetch = async (input, init) => {
      const response = await kj.h.fetch(input, init);
      return response.ok ? new Response(bytes, { status: response.status }) : response;
    };
    kj.secrets.failures = 1;
    const first = await kj.h.job({ fetch: binary }).run();
    const kept = await record();

    // Act
    const next = await kj.h.job().run();

    // Assess
    expect(first.failed).toEqual([{ id: ID, code: 'store_failed' }]);
    expect(kept.sealed_encoding).toEqual({ S: 'base64' });
    expect(next.issued).toEqual([ID]);
    expect(keysSent()).toHaveLength(1);
    const stored = kj.sm.commandCalls(CreateSecretCommand).at(-1)?.args[0].input;
    expect(stored?.SecretBinary).toEqual(bytes);
  });
});

describe('a sealed answer KMS cannot unseal just now', () => {
  /** A job whose KMS throttles Decrypt: it seals as the harness does, and cannot unseal now. */
  const kmsThrottledJob = () =>
    kj.h.job({
      sealer: {
        seal: (text, context) => kj.h.sealer.seal(text, context),
        unseal: () =>
          Promise.reject(new SealerUnavailableError('KMS Decrypt failed (ThrottlingException)')),
      },
    });

  it('without force: sealer_unavailable, not recovery_failed; no provider call; kept, and the next run stores it', async () => {
    // Regression: a throttled or failing KMS counted as a copy that cannot be
    // unsealed (recovery_failed: "the KMS key is disabled"), sending the
    // operator to the key when the next run would have stored the keys.
    // Prepare: the answer is kept sealed; KMS then throttles Decrypt
    const kept = await sealedAnswerKept();
    const throttled = kmsThrottledJob();

    // Act
    const during = await throttled.run();
    await expectKeptAndReleased(kept, 'sealer_unavailable');
    const after = await kj.h.job().run();

    // Assess
    expect(during.failed).toEqual([{ id: ID, code: 'sealer_unavailable' }]);
    expect(after.issued).toEqual([ID]);
    expect(keysSent()).toHaveLength(1);
    expect(kj.secrets.value(SECRET)).toBe(kj.h.answers[0]?.body);
  });

  it('with force: replays the request with the kept Idempotency-Key, as for a copy that cannot be unsealed', async () => {
    const kept = await sealedAnswerKept();
    const throttled = kmsThrottledJob();

    const result = await throttled.run({ businessApplicationIds: [ID], force: true });

    expect(result).toEqual({ issued: [ID], skipped: [], failed: [] });
    expect(keysSent()).toHaveLength(2);
    expect(keysSent()[1]?.headers['idempotency-key']).toBe(kept.idempotency_key?.S);
    expect(kj.secrets.value(SECRET)).toBe(kj.h.answers[0]?.body);
  });
});

describe('a sealed answer that cannot be unsealed', () => {
  it('without force: recovery_failed, no provider call, the sealed copy and its key kept', async () => {
    // Prepare
    const kept = await sealedAnswerKept();

    // Act
    const result = await restartedJob().run();

    // Assess
    expect(result.failed).toEqual([{ id: ID, code: 'recovery_failed' }]);
    expect(keysSent()).toHaveLength(1);
    await expectKeptAndReleased(kept, 'recovery_failed');
    expect(kj.secrets.value(SECRET)).toBeUndefined();
  });

  it('with force: one request with the kept Idempotency-Key, and the keys it replays are stored', async () => {
    // Prepare
    const kept = await sealedAnswerKept();

    // Act
    const result = await restartedJob().run({ businessApplicationIds: [ID], force: true });

    // Assess
    expect(result).toEqual({ issued: [ID], skipped: [], failed: [] });
    expect(keysSent()).toHaveLength(2);
    expect(keysSent()[1]?.headers['idempotency-key']).toBe(kept.idempotency_key?.S);
    expect(kj.h.answers[1]).toMatchObject({ replayed: true });
    expect(kj.h.sim.stats.keysIssued).toBe(1);
    expect(kj.secrets.value(SECRET)).toBe(kj.h.answers[0]?.body);
    expect(await record()).toMatchObject({
      state: { S: 'stored' },
      secret_version: kept.idempotency_key,
    });
  });

  it('with force and a definitive refusal of the replay: the key and sealed copy stay, the failure is recorded and the job released', async () => {
    // Prepare: the replay is refused (403): a definitive refusal, which would
    // otherwise drop the key and start afresh.
    const kept = await sealedAnswerKept();
    kj.h.sim.injectKeysFault({ kind: 'status', status: 403 });

    // Act
    const forced = await restartedJob().run({ businessApplicationIds: [ID], force: true });
    await expectKeptAndReleased(kept, 'feature_not_enabled');
    const next = await restartedJob().run();

    // Assess
    expect(forced.failed).toEqual([{ id: ID, code: 'feature_not_enabled' }]);
    // Released: the next run works on it at once (and cannot unseal it either).
    expect(next.failed).toEqual([{ id: ID, code: 'recovery_failed' }]);
    // The harness's sealer still opens it: nothing the provider issued is lost.
    const stored = await kj.h.job().run();
    expect(stored.issued).toEqual([ID]);
    expect(kj.secrets.value(SECRET)).toBe(kj.h.answers[0]?.body);
  });
});
