/** Signs requests for the local Function URL with the AWS SDK's own SigV4 signer. */
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import type { LocalIdentity } from '../../local/local-identities.js';
import type { SigV4Request } from '../../local/sigv4-verifier.js';

export type Query = Record<string, string | string[]>;

export interface SignOptions {
  identity: LocalIdentity;
  /** Overrides the identity's secret (to sign with a wrong one). */
  secretAccessKey?: string;
  sessionToken?: string;
  region?: string;
  service?: string;
  method?: string;
  hostname?: string;
  port?: number;
  path?: string;
  query?: Query;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  signingDate?: Date;
  unsignableHeaders?: Set<string>;
}

/** Temporary credentials: requests must carry the session token. */
export const TEMPORARY_IDENTITY: LocalIdentity & { sessionToken: string } = {
  accessKeyId: 'ASIALOCALTEMPORARY01',
  secretAccessKey: 'temporarySecretAccessKey0000000000000000',
  sessionToken: 'localSessionToken/with+base64=chars',
  arn: 'arn:aws:sts::111122223333:assumed-role/checkout/temporary-session',
};

export interface SignedRequest {
  method: string;
  path: string;
  /** Lower-case header names, including host and the Authorization header. */
  headers: Record<string, string>;
  body: Uint8Array;
}

/** RFC 3986 encoding, the way the SDK puts query parameters on the wire. */
export const rfc3986 = (value: string): string =>
  encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );

/** Query string as the SDK sends it: keys sorted, values RFC 3986 encoded. */
export function wireQuery(query: Query): string {
  return Object.keys(query)
    .sort()
    .flatMap((key) => {
      const value = query[key] ?? '';
      const values = Array.isArray(value) ? value : [value];
      return values.map((v) => `${rfc3986(key)}=${rfc3986(v)}`);
    })
    .join('&');
}

export async function signRequest(options: SignOptions): Promise<SignedRequest> {
  const hostname = options.hostname ?? '127.0.0.1';
  const host = options.port ? `${hostname}:${options.port}` : hostname;
  const body =
    typeof options.body === 'string'
      ? new TextEncoder().encode(options.body)
      : (options.body ?? new Uint8Array());
  const signer = new SignatureV4({
    service: options.service ?? 'lambda',
    region: options.region ?? 'us-east-1',
    credentials: {
      accessKeyId: options.identity.accessKeyId,
      secretAccessKey: options.secretAccessKey ?? options.identity.secretAccessKey,
      ...(options.sessionToken ? { sessionToken: options.sessionToken } : {}),
    },
    sha256: Sha256,
  });
  const signed = await signer.sign(
    {
      method: options.method ?? 'GET',
      protocol: 'http:',
      hostname,
      ...(options.port ? { port: options.port } : {}),
      path: options.path ?? '/token',
      query: options.query ?? {},
      headers: { host, ...(options.headers ?? {}) },
      ...(body.length > 0 ? { body } : {}),
    },
    {
      ...(options.signingDate ? { signingDate: options.signingDate } : {}),
      ...(options.unsignableHeaders ? { unsignableHeaders: options.unsignableHeaders } : {}),
    },
  );
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(signed.headers)) headers[name.toLowerCase()] = value;
  return { method: signed.method, path: signed.path, headers, body };
}

/**
 * GETs `url` signed as `identity` (service lambda, us-east-1), as a caller of
 * a running local URL sends it: the black-box tests' one signed request.
 */
export async function signedGet(url: string, identity: LocalIdentity): Promise<Response> {
  const target = new URL(url);
  const query = Object.fromEntries(target.searchParams);
  const signed = await signRequest({
    identity,
    hostname: target.hostname,
    port: Number(target.port),
    path: target.pathname,
    query,
  });
  const search = Object.keys(query).length > 0 ? `?${wireQuery(query)}` : '';
  return fetch(`${target.origin}${target.pathname}${search}`, { headers: signed.headers });
}

/**
 * Signs with `signRequest`, then builds the request as the local URL's
 * verifier receives it. `wire` stands for what a client sent other than what
 * it signed: a reordered query, another path or body.
 */
export async function signedAsReceived(
  options: SignOptions,
  wire: { rawQueryString?: string; path?: string; body?: Uint8Array } = {},
): Promise<SigV4Request> {
  const request = await signRequest(options);
  return {
    method: request.method,
    path: wire.path ?? request.path,
    rawQueryString: wire.rawQueryString ?? wireQuery(options.query ?? {}),
    headers: request.headers,
    body: wire.body ?? request.body,
  };
}
