import { randomBytes } from 'node:crypto';
import {
  DecryptCommand,
  EncryptCommand,
  GenerateDataKeyCommand,
  type KMSClient,
} from '@aws-sdk/client-kms';
import type { AwsClientStub } from 'aws-sdk-client-mock';
import { AesGcmSealer } from '../../functions/adapters/sealers.js';

/** KMS Encrypt's plaintext limit. */
export const KMS_ENCRYPT_MAX_BYTES = 4096;

/**
 * Makes a mocked KMS client behave like KMS for Encrypt, Decrypt and
 * GenerateDataKey: ciphertexts are bound to the encryption context, Encrypt
 * refuses more than 4 KiB (as KMS does), and a wrong context fails to decrypt.
 * `master` is the KMS key: pass the same one to keep decrypting what an
 * earlier fake encrypted, after a reset.
 */
export function fakeKms(
  kms: AwsClientStub<KMSClient>,
  master: AesGcmSealer = new AesGcmSealer(randomBytes(32)),
): void {
  const contextOf = (input: { EncryptionContext?: Record<string, string> }) =>
    JSON.stringify(input.EncryptionContext ?? {});
  kms.on(EncryptCommand).callsFake(async (input) => {
    const plaintext = Buffer.from(input.Plaintext);
    if (plaintext.length > KMS_ENCRYPT_MAX_BYTES) {
      throw Object.assign(new Error('1 validation error detected: Plaintext length'), {
        name: 'ValidationException',
      });
    }
    return { CiphertextBlob: await master.seal(plaintext.toString('base64'), contextOf(input)) };
  });
  kms.on(GenerateDataKeyCommand).callsFake(async (input) => {
    const key = randomBytes(32);
    return {
      Plaintext: key,
      CiphertextBlob: await master.seal(key.toString('base64'), contextOf(input)),
    };
  });
  kms.on(DecryptCommand).callsFake(async (input) => ({
    Plaintext: Buffer.from(
      await master.unseal(input.CiphertextBlob as Uint8Array, contextOf(input)),
      'base64',
    ),
  }));
}
