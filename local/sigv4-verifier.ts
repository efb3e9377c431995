/**
 * AWS Signature Version 4 verification of an `Authorization` header, as an
 * IAM-authorized Lambda Function URL performs it (service `lambda`). Pure: the
 * request, the known credentials and the clock are arguments. Deny reasons
 * never contain a secret, a session token, a signature or the header itself.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/** AWS rejects a signature whose date is more than 5 minutes from its own clock. */
export const MAX_CLOCK_SKEW_MS = 5 * 60 * 1000;

const SERVICE = 'lambda';
const ALGORITHM = 'AWS4-HMAC-SHA256';
const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';

/**
 * Every reason a request is refused, by the check that failed. The reasons are
 * fixed texts: they never quote the request (signature-refusal.ts adds what is
 * safe to say about it).
 */
export const DENIALS = {
  missing_authorization: 'missing Authorization header',
  unsupported_scheme: 'unsupported authorization scheme',
  malformed_authorization: 'malformed Authorization header',
  incomplete_authorization: 'Authorization header lacks Credential, SignedHeaders or Signature',
  malformed_credential_scope: 'malformed credential scope',
  malformed_signature: 'malformed signature',
  unknown_access_key_id: 'unknown access key id',
  wrong_region: 'credential scope has the wrong region',
  wrong_service: 'credential scope has the wrong service',
  wrong_scope_terminator: 'credential scope must end in aws4_request',
  unexpected_session_token: 'X-Amz-Security-Token sent for credentials that have no session token',
  missing_session_token: 'missing X-Amz-Security-Token for temporary credentials',
  repeated_session_token: 'repeated X-Amz-Security-Token header',
  wrong_session_token: 'X-Amz-Security-Token does not match',
  missing_date: 'missing X-Amz-Date header',
  malformed_date: 'malformed X-Amz-Date header',
  scope_date_mismatch: 'credential scope date differs from X-Amz-Date',
  clock_skew: 'signature date is more than 5 minutes from the server clock',
  signed_headers_not_lowercase: 'SignedHeaders must be lowercase names',
  signed_headers_unsorted: 'SignedHeaders must be sorted and unique',
  host_not_signed: 'host is not a signed header',
  signed_header_missing: 'a signed header is missing from the request',
  repeated_content_sha256: 'repeated X-Amz-Content-Sha256 header',
  content_sha256_mismatch: 'X-Amz-Content-Sha256 does not match the body',
  malformed_url: 'malformed percent-encoding in the URL',
  signature_mismatch: 'signature does not match',
} as const;

export type DenialCheck = keyof typeof DENIALS;

/** The check a deny reason names. */
export function denialCheck(reason: string): DenialCheck | undefined {
  return (Object.keys(DENIALS) as DenialCheck[]).find((check) => DENIALS[check] === reason);
}

/** A key the verifier knows: long-term, or temporary (with the session token it was issued with). */
export interface SigV4Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** Temporary credentials only: requests must carry it as `X-Amz-Security-Token`. */
  readonly sessionToken?: string;
}

export interface SigV4Request {
  method: string;
  /** The path as received on the wire (percent-encoded, without the query). */
  path: string;
  /** The query string as received, without the leading `?` ('' when none). */
  rawQueryString: string;
  /** Header names lowercased; a header sent several times is an array of its values. */
  headers: Record<string, string | string[] | undefined>;
  body: Uint8Array;
}

export interface SigV4Options<T extends SigV4Credentials = SigV4Credentials> {
  identities: readonly T[];
  region: string;
  /** The verifier's clock: a Date or epoch milliseconds. */
  now: Date | number;
  /** Default `lambda`. */
  service?: string;
  /**
   * How the query string is canonicalised: as AWS does by default. Only
   * signature-refusal.ts sets it, to find out how a client signed a query.
   */
  canonicalQuery?: (rawQueryString: string) => string;
}

export type SigV4Result<T extends SigV4Credentials = SigV4Credentials> =
  | { ok: true; identity: T }
  | { ok: false; reason: string };

/** RFC 3986 percent-encoding: everything but A-Z a-z 0-9 - _ . ~ (UTF-8 bytes, upper-case hex). */
export function uriEncode(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/**
 * Decodes one query-string name or value as AWS does before canonicalising it:
 * percent-escapes are decoded and `+` is a space (form encoding). Throws on a
 * malformed escape.
 */
export function decodeQueryComponent(value: string): string {
  return decodeURIComponent(value.replace(/\+/g, ' '));
}

/** Splits a raw query string into decoded [name, value] pairs, in order. Throws on a malformed escape. */
export function parseQuery(rawQueryString: string): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  if (rawQueryString === '') return pairs;
  for (const part of rawQueryString.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const name = eq === -1 ? part : part.slice(0, eq);
    const value = eq === -1 ? '' : part.slice(eq + 1);
    pairs.push([decodeQueryComponent(name), decodeQueryComponent(value)]);
  }
  return pairs;
}

/**
 * The canonical query string: every parameter decoded, then re-encoded with
 * RFC 3986, sorted by encoded name and then by encoded value, `name=value`
 * joined with `&`. Throws on a malformed escape.
 */
export function canonicalQueryString(rawQueryString: string): string {
  const encoded = parseQuery(rawQueryString).map(([name, value]) => [
    uriEncode(name),
    uriEncode(value),
  ]);
  encoded.sort(([an = '', av = ''], [bn = '', bv = '']) =>
    an < bn ? -1 : an > bn ? 1 : av < bv ? -1 : av > bv ? 1 : 0,
  );
  return encoded.map(([name, value]) => `${name}=${value}`).join('&');
}

/**
 * The canonical URI for every service but S3: the path as sent (already
 * percent-encoded once) with `.`/`..`/empty segments removed, then URI-encoded
 * again, keeping `/`.
 */
export function canonicalUri(path: string): string {
  const segments: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  const trailing = segments.length > 0 && path.endsWith('/') ? '/' : '';
  const normalized = `/${segments.join('/')}${trailing}`;
  return uriEncode(normalized).replace(/%2F/g, '/');
}

/** A header's canonical value: each value trimmed with inner whitespace collapsed, joined with `,`. */
function canonicalHeaderValue(value: string | string[]): string {
  const values = Array.isArray(value) ? value : [value];
  return values.map((v) => v.trim().replace(/\s+/g, ' ')).join(',');
}

function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data, 'utf8').digest();
}

export interface ParsedAuthorization {
  accessKeyId: string;
  date: string;
  region: string;
  service: string;
  terminator: string;
  signedHeaders: string[];
  signature: string;
}

export function parseAuthorization(header: string): ParsedAuthorization | string {
  const prefix = `${ALGORITHM} `;
  if (!header.startsWith(prefix)) return DENIALS.unsupported_scheme;
  const fields = new Map<string, string>();
  for (const part of header.slice(prefix.length).split(',')) {
    const item = part.trim();
    if (item === '') continue;
    const eq = item.indexOf('=');
    if (eq <= 0) return DENIALS.malformed_authorization;
    const key = item.slice(0, eq);
    if (fields.has(key)) return DENIALS.malformed_authorization;
    fields.set(key, item.slice(eq + 1));
  }
  const credential = fields.get('Credential');
  const signedHeaders = fields.get('SignedHeaders');
  const signature = fields.get('Signature');
  if (credential === undefined || signedHeaders === undefined || signature === undefined) {
    return DENIALS.incomplete_authorization;
  }
  if (fields.size !== 3) return DENIALS.malformed_authorization;
  const scope = credential.split('/');
  if (scope.length !== 5) return DENIALS.malformed_credential_scope;
  const [accessKeyId = '', date = '', region = '', service = '', terminator = ''] = scope;
  if (!/^[0-9a-f]{64}$/.test(signature)) return DENIALS.malformed_signature;
  return {
    accessKeyId,
    date,
    region,
    service,
    terminator,
    signedHeaders: signedHeaders.split(';'),
    signature,
  };
}

/** `YYYYMMDD'T'HHMMSS'Z'` to epoch milliseconds, or undefined. */
export function parseAmzDate(value: string): number | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const ms = Date.UTC(year, month - 1, day, hour, minute, second);
  const back = new Date(ms);
  // Reject impossible dates such as 20240231 that Date.UTC would roll over.
  if (back.getUTCDate() !== day || back.getUTCMonth() !== month - 1 || hour > 23) return undefined;
  if (minute > 59 || second > 60) return undefined;
  return ms;
}

function single(value: string | string[] | undefined): string | undefined {
  if (Array.isArray(value)) return value.length === 1 ? value[0] : undefined;
  return value;
}

/** Equal strings, compared in constant time whatever their lengths. */
function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(
    createHash('sha256').update(a, 'utf8').digest(),
    createHash('sha256').update(b, 'utf8').digest(),
  );
}

/**
 * Temporary credentials are valid only with their session token in
 * `X-Amz-Security-Token`; long-term keys take none (AWS answers "The security
 * token included in the request is invalid"). Why the header is wrong, or undefined.
 */
function checkSessionToken(
  headers: SigV4Request['headers'],
  identity: SigV4Credentials,
): string | undefined {
  const sent = Object.hasOwn(headers, 'x-amz-security-token')
    ? headers['x-amz-security-token']
    : undefined;
  if (identity.sessionToken === undefined) {
    return sent === undefined ? undefined : DENIALS.unexpected_session_token;
  }
  if (sent === undefined) return DENIALS.missing_session_token;
  const token = single(sent);
  if (token === undefined) return DENIALS.repeated_session_token;
  if (!sameSecret(token, identity.sessionToken)) return DENIALS.wrong_session_token;
  return undefined;
}

/**
 * Verifies an AWS Signature Version 4 `Authorization` header as an
 * IAM-authorized Lambda Function URL does. Reasons never contain a secret.
 */
export function verifySigV4<T extends SigV4Credentials>(
  request: SigV4Request,
  options: SigV4Options<T>,
): SigV4Result<T> {
  const service = options.service ?? SERVICE;
  const deny = (reason: string): SigV4Result<T> => ({ ok: false, reason });
  const { headers } = request;

  const authorization = Object.hasOwn(headers, 'authorization')
    ? single(headers.authorization)
    : undefined;
  if (authorization === undefined) return deny(DENIALS.missing_authorization);
  const auth = parseAuthorization(authorization);
  if (typeof auth === 'string') return deny(auth);

  const identity = options.identities.find((i) => i.accessKeyId === auth.accessKeyId);
  if (!identity) return deny(DENIALS.unknown_access_key_id);
  if (auth.region !== options.region) return deny(DENIALS.wrong_region);
  if (auth.service !== service) return deny(DENIALS.wrong_service);
  if (auth.terminator !== 'aws4_request') return deny(DENIALS.wrong_scope_terminator);
  const tokenProblem = checkSessionToken(headers, identity);
  if (tokenProblem) return deny(tokenProblem);

  const amzDate = Object.hasOwn(headers, 'x-amz-date') ? single(headers['x-amz-date']) : undefined;
  if (amzDate === undefined) return deny(DENIALS.missing_date);
  const signedAt = parseAmzDate(amzDate);
  if (signedAt === undefined) return deny(DENIALS.malformed_date);
  if (amzDate.slice(0, 8) !== auth.date) return deny(DENIALS.scope_date_mismatch);
  const now = typeof options.now === 'number' ? options.now : options.now.getTime();
  if (Math.abs(now - signedAt) > MAX_CLOCK_SKEW_MS) {
    return deny(DENIALS.clock_skew);
  }

  const signed = auth.signedHeaders;
  if (signed.some((name) => name === '' || name !== name.toLowerCase())) {
    return deny(DENIALS.signed_headers_not_lowercase);
  }
  for (let i = 1; i < signed.length; i++) {
    if ((signed[i - 1] ?? '') >= (signed[i] ?? '')) {
      return deny(DENIALS.signed_headers_unsorted);
    }
  }
  if (!signed.includes('host')) return deny(DENIALS.host_not_signed);
  const canonicalHeaders: string[] = [];
  for (const name of signed) {
    const value = Object.hasOwn(headers, name) ? headers[name] : undefined;
    if (value === undefined) return deny(DENIALS.signed_header_missing);
    canonicalHeaders.push(`${name}:${canonicalHeaderValue(value)}\n`);
  }

  const bodyHash = sha256Hex(request.body);
  let payloadHash = bodyHash;
  const contentSha = Object.hasOwn(headers, 'x-amz-content-sha256')
    ? headers['x-amz-content-sha256']
    : undefined;
  if (contentSha !== undefined) {
    const declared = single(contentSha);
    if (declared === undefined) return deny(DENIALS.repeated_content_sha256);
    if (declared !== UNSIGNED_PAYLOAD && declared !== bodyHash) {
      return deny(DENIALS.content_sha256_mismatch);
    }
    payloadHash = declared;
  }

  let query: string;
  let uri: string;
  try {
    query = (options.canonicalQuery ?? canonicalQueryString)(request.rawQueryString);
    uri = canonicalUri(request.path);
  } catch {
    return deny(DENIALS.malformed_url);
  }

  const canonicalRequest = [
    request.method.toUpperCase(),
    uri,
    query,
    canonicalHeaders.join(''),
    signed.join(';'),
    payloadHash,
  ].join('\n');
  const scope = `${auth.date}/${auth.region}/${auth.service}/aws4_request`;
  const stringToSign = [ALGORITHM, amzDate, scope, sha256Hex(canonicalRequest)].join('\n');

  const kDate = hmac(`AWS4${identity.secretAccessKey}`, auth.date);
  const kRegion = hmac(kDate, auth.region);
  const kService = hmac(kRegion, auth.service);
  const kSigning = hmac(kService, 'aws4_request');
  const expected = Buffer.from(hmac(kSigning, stringToSign).toString('hex'), 'utf8');
  const given = Buffer.from(auth.signature, 'utf8');
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
    return deny(DENIALS.signature_mismatch);
  }
  return { ok: true, identity };
}
