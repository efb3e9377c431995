import {
  DecryptCommand,
  GenerateDataKeyCommand,
  KMSClient,
  KMSServiceException,
} from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { KmsEnvelopeSealer } from '../../functions/adapters/kms-envelope-sealer.js';
import { KmsSealer } from '../../functions/adapters/sealers.js';
import { SealerUnavailableError } from '../../functions/core/errors.js';
import { fakeKms, KMS_ENCRYPT_MAX_BYTES } from '../support/fake-kms.js';

const kms = mockClient(KMSClient);
beforeEach(() => {
  kms.reset();
  fakeKms(kms);
});

/** A key-issuing answer larger than KMS Encrypt takes. */
const LARGE = JSON.stringify({ key: 'k', secret: 's', padding: 'x'.repeat(5000) });

describe('KmsEnvelopeSealer', () => {
  it('regression: seals an answer over 4 KiB, which KMS Encrypt itself refuses', async () => {
    const direct = await new KmsSealer(new KMSClient({}), 'alias/tv')
      .seal(LARGE, 'KEYS#ba_1')
      .catch((e: unknown) => e);
    const sealer = new KmsEnvelopeSealer(new KMSClient({}), 'alias/tv');

    const sealed = await sealer.seal(LARGE, 'KEYS#ba_1');

    expect(LARGE.length).toBeGreaterThan(KMS_ENCRYPT_MAX_BYTES);
    expect(direct).toMatchObject({ cause: { name: 'ValidationException' } });
    expect(await sealer.unseal(sealed, 'KEYS#ba_1')).toBe(LARGE);
    expect(Buffer.from(sealed).toString('utf8')).not.toContain('padding');
  });

  it('binds the blob to its context: it cannot be unsealed under another item key', async () => {
    const sealer = new KmsEnvelopeSealer(new KMSClient({}), 'alias/tv');
    const sealed = await sealer.seal('answer', 'KEYS#ba_1');

    await expect(sealer.unseal(sealed, 'KEYS#ba_2')).rejects.toThrow();
  });

  it('asks KMS for an AES-256 data key under the item key as encryption context', async () => {
    await new KmsEnvelopeSealer(new KMSClient({}), 'alias/tv').seal('answer', 'KEYS#ba_1');

    expect(kms.commandCalls(GenerateDataKeyCommand)[0]?.args[0].input).toEqual({
      KeyId: 'alias/tv',
      KeySpec: 'AES_256',
      EncryptionContext: { pk: 'KEYS#ba_1' },
    });
  });

  it('refuses a blob that is not an envelope', async () => {
    const sealer = new KmsEnvelopeSealer(new KMSClient({}), 'alias/tv');
    await expect(sealer.unseal(Uint8Array.of(1, 2, 3), 'KEYS#ba_1')).rejects.toThrow(
      'not an envelope',
    );
  });

  it('sorts KMS failures as the token sealer does: throttling is KMS unavailable, a refused blob is not', async () => {
    const sealer = new KmsEnvelopeSealer(new KMSClient({}), 'alias/tv');
    const sealed = await sealer.seal('answer', 'KEYS#ba_1');
    const answer = (name: string, fault: 'client' | 'server') =>
      new KMSServiceException({
        name,
        $fault: fault,
        message: name,
        $metadata: { httpStatusCode: 400 },
      });

    kms.on(DecryptCommand).rejects(answer('ThrottlingException', 'client'));
    const throttled = await sealer.unseal(sealed, 'KEYS#ba_1').catch((e: unknown) => e);
    kms.on(DecryptCommand).rejects(answer('InvalidCiphertextException', 'client'));
    const refused = await sealer.unseal(sealed, 'KEYS#ba_1').catch((e: unknown) => e);
    kms.on(GenerateDataKeyCommand).rejects(answer('ThrottlingException', 'client'));
    const sealing = await sealer.seal('answer', 'KEYS#ba_1').catch((e: unknown) => e);

    expect(throttled).toBeInstanceOf(SealerUnavailableError);
    expect(refused).not.toBeInstanceOf(SealerUnavailableError);
    expect(refused).toMatchObject({ name: 'InvalidCiphertextException' });
    expect(sealing).toBeInstanceOf(SealerUnavailableError);
  });
});
