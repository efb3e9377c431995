import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { DecryptCommand, EncryptCommand, type KMSClient } from '@aws-sdk/client-kms';
import { isThrottlingError, isTransientError } from '@smithy/core/retry';
import { SealerUnavailableError } from '../core/errors.js';
import type { Sealer } from '../core/ports.js';

/**
 * Whether a KMS call failed because KMS could not answer now, rather than
 * because of what was asked (a blob sealed under another key, a corrupt one,
 * a disabled key). KMS throttles with a 400 ThrottlingException once the
 * account's quota for cryptographic operations, shared by Encrypt and
 * Decrypt, is spent (https://docs.aws.amazon.com/kms/latest/developerguide/throttling.html);
 * DependencyTimeoutException, KeyUnavailableException and KMSInternalException
 * are 5xx answers that "can be retried". A call that got no HTTP answer at all
 * (a timeout, a refused connection) tells nothing about the blob either.
 */
function kmsUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  // A KMS answer carries its fault (the SDK's ServiceException); without one, there was no answer.
  const failed = error as Parameters<typeof isThrottlingError>[0] & {
    $fault?: 'client' | 'server';
  };
  if (failed.$fault === undefined) return true;
  return failed.$fault === 'server' || isThrottlingError(failed) || isTransientError(failed);
}

const unavailable = (operation: string, error: unknown) =>
  new SealerUnavailableError(
    `KMS ${operation} failed (${error instanceof Error ? error.name : 'UnknownError'})`,
    { cause: error },
  );

/**
 * Seals with KMS Encrypt; the item key is the encryption context, so blobs
 * cannot be swapped. Any failure to seal makes KMS unavailable to the cache
 * (SealerUnavailableError); a failure to unseal does only when KMS could not
 * answer (kmsUnavailable), else the blob cannot be unsealed.
 */
export class KmsSealer implements Sealer {
  readonly #client: KMSClient;
  readonly #keyId: string;

  constructor(client: KMSClient, keyId: string) {
    this.#client = client;
    this.#keyId = keyId;
  }

  async seal(plaintext: string, context: string): Promise<Uint8Array> {
    const out = await this.#client
      .send(
        new EncryptCommand({
          KeyId: this.#keyId,
          Plaintext: Buffer.from(plaintext, 'utf8'),
          EncryptionContext: { pk: context },
        }),
      )
      .catch((error: unknown) => {
        throw unavailable('Encrypt', error);
      });
    if (!out.CiphertextBlob) throw new SealerUnavailableError('KMS Encrypt returned no ciphertext');
    return out.CiphertextBlob;
  }

  async unseal(sealed: Uint8Array, context: string): Promise<string> {
    const out = await this.#client
      .send(
        new DecryptCommand({
          KeyId: this.#keyId,
          CiphertextBlob: sealed,
          EncryptionContext: { pk: context },
        }),
      )
      .catch((error: unknown) => {
        throw kmsUnavailable(error) ? unavailable('Decrypt', error) : error;
      });
    if (!out.Plaintext) throw new Error('KMS Decrypt returned no plaintext');
    return Buffer.from(out.Plaintext).toString('utf8');
  }
}

const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * AES-256-GCM under a 32-byte key the caller supplies (the local stack makes
 * one per start and shares it with `npm run admin` through a 0600 file).
 * Layout: version byte, IV, tag, ciphertext; the context is the AAD.
 */
export class AesGcmSealer implements Sealer {
  readonly #key: Buffer;

  constructor(key: Uint8Array = randomBytes(32)) {
    if (key.length !== 32) throw new Error('AesGcmSealer needs a 32-byte key');
    this.#key = Buffer.from(key);
  }

  async seal(plaintext: string, context: string): Promise<Uint8Array> {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.of(VERSION), iv, cipher.getAuthTag(), body]);
  }

  async unseal(sealed: Uint8Array, context: string): Promise<string> {
    const blob = Buffer.from(sealed);
    if (blob.length < 1 + IV_BYTES + TAG_BYTES || blob[0] !== VERSION) {
      throw new Error('sealed blob has an unknown format');
    }
    const iv = blob.subarray(1, 1 + IV_BYTES);
    const tag = blob.subarray(1 + IV_BYTES, 1 + IV_BYTES + TAG_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', this.#key, iv);
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(tag);
    return Buffer.concat([
      decipher.update(blob.subarray(1 + IV_BYTES + TAG_BYTES)),
      decipher.final(),
    ]).toString('utf8');
  }
}
