import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import { TokenVendingError } from './errors.js';
import type { AwsCredentials, AwsCredentialsProvider } from './types.js';

/** A GET request to the vend URL, signed and ready to send. */
export interface SignedRequest {
  readonly url: string;
  /** Everything but `host`, which fetch derives from the URL (and which was signed as such). */
  readonly headers: Record<string, string>;
}

/** RFC 3986 percent-encoding, as SigV4 canonicalises query parameters. */
const rfc3986 = (value: string): string =>
  encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );

/**
 * A header value fetch sends: visible ASCII, spaces and tabs inside only.
 * AWS access key ids, session tokens and SigV4's own headers are ASCII.
 */
const HEADER_VALUE = /^[\x21-\x7e](?:[\t\x20-\x7e]*[\x21-\x7e])?$/;

/**
 * What fetch strips from each end of a header value before sending it (HTTP
 * whitespace, Fetch's "normalize"), as SigV4 trims it before signing: a
 * session token read from a file with its line ending still signs and sends.
 */
const HTTP_WHITESPACE_ENDS = /^[\t\n\r ]+|[\t\n\r ]+$/g;

/** Signs requests for a Function URL with AWS Signature Version 4, service `lambda`. */
export class VendRequestSigner {
  readonly #signer: SignatureV4;
  readonly #base: URL;

  /** The URL's host, for messages. */
  get host(): string {
    return this.#base.host;
  }

  constructor(base: URL, region: string, credentials: AwsCredentials | AwsCredentialsProvider) {
    this.#base = base;
    this.#signer = new SignatureV4({ service: 'lambda', region, credentials, sha256: Sha256 });
  }

  /** Signs `GET <base>/<path>?<query>`; the query is sent sorted and RFC 3986 encoded. */
  async sign(path: string, query: Record<string, string>): Promise<SignedRequest> {
    const base = this.#base;
    const fullPath = `${base.pathname.replace(/\/+$/, '')}/${path}`;
    const wire = Object.keys(query)
      .sort()
      .map((name) => `${rfc3986(name)}=${rfc3986(query[name] ?? '')}`)
      .join('&');
    let signed: Awaited<ReturnType<SignatureV4['sign']>>;
    try {
      signed = await this.#signer.sign({
        method: 'GET',
        protocol: base.protocol,
        hostname: base.hostname,
        ...(base.port ? { port: Number(base.port) } : {}),
        path: fullPath,
        query,
        headers: { host: base.host },
      });
    } catch (error) {
      // Signing fails only when the credentials cannot be resolved.
      throw new TokenVendingError('credentials_unavailable', 'No AWS credentials to sign with', {
        status: 0,
        cause: error,
      });
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(signed.headers)) {
      if (name.toLowerCase() === 'host') continue;
      const sent = value.replace(HTTP_WHITESPACE_ENDS, '');
      if (!HEADER_VALUE.test(sent)) {
        // fetch would refuse it with an error quoting the whole value (undici's
        // 'Headers.append: "AWS4-HMAC-SHA256 Credential=..." is an invalid
        // header value'): the Authorization header, or the session token.
        // Neither the value nor that error goes into this one.
        throw new TokenVendingError(
          'credentials_unavailable',
          `The AWS credentials cannot be sent: the ${name} header they make holds a character HTTP does not allow (a line break left in an environment variable?)`,
          { status: 0 },
        );
      }
      headers[name] = sent;
    }
    return { url: `${base.origin}${fullPath}${wire ? `?${wire}` : ''}`, headers };
  }
}
