import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { DecryptCommand, EncryptCommand, type KMSClient } from '@aws-sdk/client-kms';
import { SealedUnderOtherKeyError, SealerUnavailableError } from '../core/errors.js';
import type { Sealer } from '../core/ports.js';

/**
 * The Decrypt errors that say this blob cannot be unsealed with this key,
 * whatever is tried again: sealed under another key or context, corrupt, or a
 * key that is disabled, pending deletion, gone or not ours to use. Any other
 * failure (throttling: a 400 ThrottlingException once the account's quota for
 * cryptographic operations, which Encrypt and Decrypt share, is spent,
 * https://docs.aws.amazon.com/kms/latest/developerguide/throttling.html; the
 * 5xx DependencyTimeoutException, KeyUnavailableException and
 * KMSInternalException, which "can be retried"; no answer at all; expired
 * credentials) tells nothing about the blob: KMS is unavailable, and a good
 * stored token must not be minted over.
 */
const CANNOT_UNSEAL = new Set([
  'InvalidCiphertextException',
  'IncorrectKeyException',
  'AccessDeniedException',
  'DisabledException',
  'KMSInvalidStateException',
  'NotFoundException',
  'InvalidKeyUsageException',
  'InvalidGrantTokenException',
]);

/** A failed KMS call as the cache's Sealer port names it: KMS cannot answer now. */
export const kmsUnavailable = (operation: string, error: unknown): SealerUnavailableError =>
  new SealerUnavailableError(
    `KMS ${operation} failed (${error instanceof Error ? error.name : 'UnknownError'})`,
    { cause: error },
  );

/**
 * A failed Decrypt: KMS unavailable unless the blob cannot be unsealed
 * (CANNOT_UNSEAL). Of those, a blob sealed under another key than the one
 * named (IncorrectKeyException: "The KeyId in a Decrypt request ... must
 * identify the same KMS key that was used to encrypt the ciphertext") is
 * SealedUnderOtherKeyError, what a change of key gives once per item; any
 * other is the error itself: the key refuses (disabled, denied, pending
 * deletion) or the blob is corrupt or not ours.
 */
const decryptFailure = (error: unknown): unknown => {
  if (!(error instanceof Error && CANNOT_UNSEAL.has(error.name))) {
    return kmsUnavailable('Decrypt', error);
  }
  return error.name === 'IncorrectKeyException'
    ? new SealedUnderOtherKeyError(`KMS Decrypt: sealed under another key (${error.name})`, {
        cause: error,
      })
    : error;
};

/**
 * KMS Decrypt of `blob` under `keyId`, with the item key `context` as its
 * encryption context: the plaintext, or the failure sorted by decryptFailure.
 */
export async function kmsDecrypt(
  client: KMSClient,
  keyId: string,
  blob: Uint8Array,
  context: string,
): Promise<Uint8Array> {
  const out = await client
    .send(
      new DecryptCommand({
        KeyId: keyId,
        CiphertextBlob: blob,
        EncryptionContext: { pk: context },
      }),
    )
    .catch((error: unknown) => {
      throw decryptFailure(error);
    });
  if (!out.Plaintext) throw new Error('KMS Decrypt returned no plaintext');
  return out.Plaintext;
}

/**
 * Seals with KMS Encrypt; the item key is the encryption context, so blobs
 * cannot be swapped. Any failure to seal makes KMS unavailable to the cache
 * (SealerUnavailableError); a failure to unseal does unless KMS says the blob
 * cannot be unsealed (CANNOT_UNSEAL).
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
        throw kmsUnavailable('Encrypt', error);
      });
    if (!out.CiphertextBlob) throw new SealerUnavailableError('KMS Encrypt returned no ciphertext');
    return out.CiphertextBlob;
  }

  async unseal(sealed: Uint8Array, context: string): Promise<string> {
    const plaintext = await kmsDecrypt(this.#client, this.#keyId, sealed, context);
    return Buffer.from(plaintext).toString('utf8');
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
