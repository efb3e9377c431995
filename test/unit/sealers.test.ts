import { randomBytes } from 'node:crypto';
import {
  DecryptCommand,
  EncryptCommand,
  InvalidCiphertextException,
  KMSClient,
  KMSServiceException,
} from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-vitest/extend';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { AesGcmSealer, KmsSealer } from '../../functions/adapters/sealers.js';
import { SealedUnderOtherKeyError, SealerUnavailableError } from '../../functions/core/errors.js';

const TOKEN = 'sim_token_do_not_leak_0123456789abcdef';
const PK = 'TOKEN#ba_123';

describe('AesGcmSealer', () => {
  it('unseals what it sealed', async () => {
    // Prepare
    const sealer = new AesGcmSealer();

    // Act
    const sealed = await sealer.seal(TOKEN, PK);
    const unsealed = await sealer.unseal(sealed, PK);

    // Assess
    expect(unsealed).toBe(TOKEN);
  });

  it('round-trips non-ASCII text and the empty string', async () => {
    // Prepare
    const sealer = new AesGcmSealer();

    // Act
    const unicode = await sealer.unseal(await sealer.seal('tök€n ✓', PK), PK);
    const empty = await sealer.unseal(await sealer.seal('', PK), PK);

    // Assess
    expect([unicode, empty]).toEqual(['tök€n ✓', '']);
  });

  it('does not contain the plaintext, and differs on every seal', async () => {
    // Prepare
    const sealer = new AesGcmSealer();

    // Act
    const first = Buffer.from(await sealer.seal(TOKEN, PK));
    const second = Buffer.from(await sealer.seal(TOKEN, PK));

    // Assess
    for (const blob of [first, second]) {
      expect(blob.includes(Buffer.from(TOKEN, 'utf8'))).toBe(false);
      expect(blob.toString('latin1')).not.toContain('do_not_leak');
      expect(blob.toString('base64')).not.toContain(Buffer.from(TOKEN).toString('base64'));
    }
    expect(first.equals(second)).toBe(false);
  });

  it('fails to unseal under another context', async () => {
    // Prepare
    const sealer = new AesGcmSealer();
    const sealed = await sealer.seal(TOKEN, PK);

    // Act / Assess
    await expect(sealer.unseal(sealed, 'TOKEN#ba_456')).rejects.toThrow();
  });

  it('fails to unseal under another key (another instance)', async () => {
    // Prepare
    const sealed = await new AesGcmSealer().seal(TOKEN, PK);

    // Act / Assess
    await expect(new AesGcmSealer().unseal(sealed, PK)).rejects.toThrow();
  });

  it('unseals under the same key given to another instance', async () => {
    // Prepare
    const key = randomBytes(32);
    const sealed = await new AesGcmSealer(key).seal(TOKEN, PK);

    // Act
    const unsealed = await new AesGcmSealer(key).unseal(sealed, PK);

    // Assess
    expect(unsealed).toBe(TOKEN);
  });

  it.each([
    ['the version byte', 0],
    ['the IV', 5],
    ['the tag', 20],
    ['the ciphertext', -1],
  ])('fails to unseal a blob with %s changed', async (_label, index) => {
    // Prepare
    const sealer = new AesGcmSealer();
    const sealed = Buffer.from(await sealer.seal(TOKEN, PK));
    const at = index < 0 ? sealed.length + index : index;
    sealed[at] = (sealed[at] ?? 0) ^ 0x01;

    // Act / Assess
    await expect(sealer.unseal(sealed, PK)).rejects.toThrow();
  });

  it('fails to unseal a truncated or empty blob', async () => {
    // Prepare
    const sealer = new AesGcmSealer();
    const sealed = await sealer.seal(TOKEN, PK);

    // Act / Assess
    await expect(sealer.unseal(sealed.subarray(0, sealed.length - 1), PK)).rejects.toThrow();
    await expect(sealer.unseal(sealed.subarray(0, 20), PK)).rejects.toThrow(
      'sealed blob has an unknown format',
    );
    await expect(sealer.unseal(new Uint8Array(), PK)).rejects.toThrow(
      'sealed blob has an unknown format',
    );
  });

  it('refuses a key that is not 32 bytes', () => {
    // Act / Assess
    expect(() => new AesGcmSealer(randomBytes(16))).toThrow('AesGcmSealer needs a 32-byte key');
  });
});

describe('KmsSealer', () => {
  const KEY_ID = 'arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab';
  const kms = mockClient(KMSClient);
  const CIPHERTEXT = Uint8Array.from([1, 2, 3, 4, 5]);

  beforeEach(() => {
    kms.reset();
  });

  afterAll(() => {
    kms.restore();
  });

  const sealer = (): KmsSealer => new KmsSealer(new KMSClient({ region: 'us-east-1' }), KEY_ID);

  it('encrypts with the key and the item key as encryption context', async () => {
    // Prepare
    kms.on(EncryptCommand).resolves({ CiphertextBlob: CIPHERTEXT, KeyId: KEY_ID });

    // Act
    const sealed = await sealer().seal(TOKEN, PK);

    // Assess
    expect(sealed).toEqual(CIPHERTEXT);
    expect(kms).toHaveReceivedCommandExactlyOnceWith(EncryptCommand, {
      KeyId: KEY_ID,
      EncryptionContext: { pk: PK },
    });
    const input = kms.commandCalls(EncryptCommand)[0]?.args[0].input;
    expect(Buffer.from(input?.Plaintext ?? []).toString('utf8')).toBe(TOKEN);
  });

  it('decrypts with the key and the item key as encryption context', async () => {
    // Prepare
    kms.on(DecryptCommand).resolves({ Plaintext: Buffer.from(TOKEN, 'utf8'), KeyId: KEY_ID });

    // Act
    const unsealed = await sealer().unseal(CIPHERTEXT, PK);

    // Assess
    expect(unsealed).toBe(TOKEN);
    expect(kms).toHaveReceivedCommandExactlyOnceWith(DecryptCommand, {
      KeyId: KEY_ID,
      CiphertextBlob: CIPHERTEXT,
      EncryptionContext: { pk: PK },
    });
  });

  it('lets a KMS InvalidCiphertextException from Decrypt propagate', async () => {
    // Prepare
    kms
      .on(DecryptCommand)
      .rejects(new InvalidCiphertextException({ message: 'context mismatch', $metadata: {} }));

    // Act
    const error = await sealer()
      .unseal(CIPHERTEXT, 'TOKEN#ba_456')
      .catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(InvalidCiphertextException);
    expect(error).toMatchObject({ name: 'InvalidCiphertextException' });
  });

  describe('KMS that cannot answer now, against a blob it cannot unseal', () => {
    const answer = (name: string, fault: 'client' | 'server', status: number) =>
      new KMSServiceException({
        name,
        $fault: fault,
        message: name,
        $metadata: { httpStatusCode: status },
      });
    const noAnswer = () =>
      Object.assign(new Error('socket timed out'), { name: 'TimeoutError', $metadata: {} });

    it.each([
      ['ThrottlingException', () => answer('ThrottlingException', 'client', 400)],
      ['KMSInternalException', () => answer('KMSInternalException', 'server', 500)],
      ['DependencyTimeoutException', () => answer('DependencyTimeoutException', 'server', 503)],
      ['KeyUnavailableException', () => answer('KeyUnavailableException', 'server', 500)],
      [
        'ExpiredTokenException (our credentials)',
        () => answer('ExpiredTokenException', 'client', 400),
      ],
      ['an error KMS may add one day', () => answer('SomeNewException', 'client', 400)],
      ['no answer at all (a timeout)', noAnswer],
    ])('an unseal that fails with %s: the sealer is unavailable', async (_, error) => {
      kms.on(DecryptCommand).rejects(error());

      const failure = await sealer()
        .unseal(CIPHERTEXT, PK)
        .catch((e: unknown) => e);

      expect(failure).toBeInstanceOf(SealerUnavailableError);
    });

    it('an unseal that fails with IncorrectKeyException: sealed under another key, said apart', async () => {
      kms.on(DecryptCommand).rejects(answer('IncorrectKeyException', 'client', 400));

      const failure = await sealer()
        .unseal(CIPHERTEXT, PK)
        .catch((e: unknown) => e);

      expect(failure).toBeInstanceOf(SealedUnderOtherKeyError);
      expect(failure).toMatchObject({ cause: { name: 'IncorrectKeyException' } });
    });

    it.each([
      'InvalidCiphertextException',
      'AccessDeniedException',
      'DisabledException',
      'KMSInvalidStateException',
      'NotFoundException',
      'InvalidKeyUsageException',
      'InvalidGrantTokenException',
    ])('an unseal that fails with %s: the blob cannot be unsealed', async (name) => {
      kms.on(DecryptCommand).rejects(answer(name, 'client', 400));

      const failure = await sealer()
        .unseal(CIPHERTEXT, PK)
        .catch((e: unknown) => e);

      expect(failure).not.toBeInstanceOf(SealerUnavailableError);
      expect(failure).toMatchObject({ name });
    });

    it.each([
      ['ThrottlingException', () => answer('ThrottlingException', 'client', 400)],
      ['AccessDeniedException', () => answer('AccessDeniedException', 'client', 400)],
      ['no answer at all (a timeout)', noAnswer],
    ])('a seal that fails with %s: the sealer is unavailable', async (_, error) => {
      kms.on(EncryptCommand).rejects(error());

      const failure = await sealer()
        .seal(TOKEN, PK)
        .catch((e: unknown) => e);

      expect(failure).toBeInstanceOf(SealerUnavailableError);
      expect(String(failure)).not.toContain(TOKEN);
    });
  });

  it('fails when Encrypt returns no ciphertext, as a sealer that cannot seal now', async () => {
    // Prepare
    kms.on(EncryptCommand).resolves({});

    // Act
    const failure = await sealer()
      .seal(TOKEN, PK)
      .catch((e: unknown) => e);

    // Assess
    expect(failure).toBeInstanceOf(SealerUnavailableError);
    expect(failure).toMatchObject({ message: 'KMS Encrypt returned no ciphertext' });
  });

  it('fails when Decrypt returns no plaintext', async () => {
    // Prepare
    kms.on(DecryptCommand).resolves({});

    // Act / Assess
    await expect(sealer().unseal(CIPHERTEXT, PK)).rejects.toThrow(
      'KMS Decrypt returned no plaintext',
    );
  });
});
