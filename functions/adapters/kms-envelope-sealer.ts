import { GenerateDataKeyCommand, type KMSClient } from '@aws-sdk/client-kms';
import type { Sealer } from '../core/ports.js';
import { AesGcmSealer, kmsDecrypt, kmsUnavailable } from './sealers.js';

/** Format byte of an envelope blob (AesGcmSealer blobs start with 1). */
const ENVELOPE = 0x45;

/**
 * Envelope encryption for payloads of any size: a fresh data key from KMS
 * `GenerateDataKey` (encryption context `{pk: context}`) seals the plaintext
 * with AES-256-GCM (the context as AAD); the blob carries the encrypted data
 * key. KMS `Encrypt` itself takes at most 4 KiB, which a key-issuing answer
 * (up to 64 KiB) can exceed. Layout: format byte, encrypted key length (2
 * bytes), encrypted key, AesGcmSealer blob. KMS errors are sorted as
 * KmsSealer sorts them: SealerUnavailableError when KMS cannot answer now.
 */
export class KmsEnvelopeSealer implements Sealer {
  readonly #client: KMSClient;
  readonly #keyId: string;

  constructor(client: KMSClient, keyId: string) {
    this.#client = client;
    this.#keyId = keyId;
  }

  async seal(plaintext: string, context: string): Promise<Uint8Array> {
    const out = await this.#client
      .send(
        new GenerateDataKeyCommand({
          KeyId: this.#keyId,
          KeySpec: 'AES_256',
          EncryptionContext: { pk: context },
        }),
      )
      .catch((error: unknown) => {
        throw kmsUnavailable('GenerateDataKey', error);
      });
    if (!out.Plaintext || !out.CiphertextBlob)
      throw new Error('KMS GenerateDataKey returned no key');
    const dataKey = Buffer.from(out.Plaintext);
    try {
      const body = await new AesGcmSealer(dataKey).seal(plaintext, context);
      const wrapped = out.CiphertextBlob;
      const length = Buffer.alloc(2);
      length.writeUInt16BE(wrapped.length);
      return Buffer.concat([Buffer.of(ENVELOPE), length, wrapped, body]);
    } finally {
      dataKey.fill(0);
    }
  }

  async unseal(sealed: Uint8Array, context: string): Promise<string> {
    const blob = Buffer.from(sealed);
    if (blob.length < 3 || blob[0] !== ENVELOPE) throw new Error('sealed blob is not an envelope');
    const wrappedLength = blob.readUInt16BE(1);
    const wrapped = blob.subarray(3, 3 + wrappedLength);
    const dataKey = Buffer.from(await kmsDecrypt(this.#client, this.#keyId, wrapped, context));
    try {
      return await new AesGcmSealer(dataKey).unseal(blob.subarray(3 + wrappedLength), context);
    } finally {
      dataKey.fill(0);
    }
  }
}
