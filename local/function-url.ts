/**
 * A local Lambda Function URL with `AuthType AWS_IAM`: checks AWS Signature
 * Version 4 (service `lambda`) the way the real URL does, answers 403
 * `{"Message":"Forbidden"}` to anything unsigned or wrongly signed, and invokes
 * the handler with a payload format 2.0 event carrying the caller's IAM identity.
 *
 * Callers are the configured local identities (access key, secret, ARN); they
 * stand in for IAM principals. Nothing here logs or echoes the Authorization
 * header or a secret.
 */
import { createHash, createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type {
  APIGatewayProxyStructuredResultV2,
  LambdaFunctionURLEvent,
  LambdaFunctionURLEventWithIAMAuthorizer,
  LambdaFunctionURLResult,
} from 'aws-lambda';

export interface LocalIdentity {
  accessKeyId: string;
  secretAccessKey: string;
  /** The IAM principal this key stands for (`requestContext.authorizer.iam.userArn`). */
  arn: string;
}

export type UrlHandler = (event: LambdaFunctionURLEvent) => Promise<LambdaFunctionURLResult>;

export interface LocalFunctionUrl {
  readonly url: string;
  close(): Promise<void>;
}

export interface LocalFunctionUrlOptions {
  handler: UrlHandler;
  identities: LocalIdentity[];
  /** Region of the signing scope. Default us-east-1. */
  region?: string;
  /** 0 or absent: a random free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Called with the (secret-free) reason whenever a request is answered 403. */
  onDenied?: (reason: string) => void;
  /** Clock for the signature date check, epoch milliseconds. Default Date.now. */
  now?: () => number;
}

/** The identity the local stack knows by default (not a real AWS key). */
export const DEMO_IDENTITY: LocalIdentity = Object.freeze({
  accessKeyId: 'AKIALOCALDEMO0000001',
  secretAccessKey: 'localDemoSecretAccessKey0000000000000000',
  arn: 'arn:aws:iam::000000000000:role/local-demo',
});

/** Lambda's synchronous invocation payload limit. */
export const MAX_BODY_BYTES = 6 * 1024 * 1024;
/** AWS rejects a signature whose date is more than 5 minutes from its own clock. */
export const MAX_CLOCK_SKEW_MS = 5 * 60 * 1000;

const SERVICE = 'lambda';
const ALGORITHM = 'AWS4-HMAC-SHA256';
const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';

// ---------------------------------------------------------------------------
// SigV4 verification (pure)
// ---------------------------------------------------------------------------

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

export interface SigV4Options {
  identities: readonly LocalIdentity[];
  region: string;
  /** The verifier's clock: a Date or epoch milliseconds. */
  now: Date | number;
  /** Default `lambda`. */
  service?: string;
}

export type SigV4Result = { ok: true; identity: LocalIdentity } | { ok: false; reason: string };

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

interface ParsedAuthorization {
  accessKeyId: string;
  date: string;
  region: string;
  service: string;
  terminator: string;
  signedHeaders: string[];
  signature: string;
}

function parseAuthorization(header: string): ParsedAuthorization | string {
  const prefix = `${ALGORITHM} `;
  if (!header.startsWith(prefix)) return 'unsupported authorization scheme';
  const fields = new Map<string, string>();
  for (const part of header.slice(prefix.length).split(',')) {
    const item = part.trim();
    if (item === '') continue;
    const eq = item.indexOf('=');
    if (eq <= 0) return 'malformed Authorization header';
    const key = item.slice(0, eq);
    if (fields.has(key)) return 'malformed Authorization header';
    fields.set(key, item.slice(eq + 1));
  }
  const credential = fields.get('Credential');
  const signedHeaders = fields.get('SignedHeaders');
  const signature = fields.get('Signature');
  if (credential === undefined || signedHeaders === undefined || signature === undefined) {
    return 'Authorization header lacks Credential, SignedHeaders or Signature';
  }
  if (fields.size !== 3) return 'malformed Authorization header';
  const scope = credential.split('/');
  if (scope.length !== 5) return 'malformed credential scope';
  const [accessKeyId = '', date = '', region = '', service = '', terminator = ''] = scope;
  if (!/^[0-9a-f]{64}$/.test(signature)) return 'malformed signature';
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
function parseAmzDate(value: string): number | undefined {
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

/**
 * Verifies an AWS Signature Version 4 `Authorization` header as an
 * IAM-authorized Lambda Function URL does. Reasons never contain a secret.
 */
export function verifySigV4(request: SigV4Request, options: SigV4Options): SigV4Result {
  const service = options.service ?? SERVICE;
  const deny = (reason: string): SigV4Result => ({ ok: false, reason });
  const { headers } = request;

  const authorization = Object.hasOwn(headers, 'authorization')
    ? single(headers.authorization)
    : undefined;
  if (authorization === undefined) return deny('missing Authorization header');
  const auth = parseAuthorization(authorization);
  if (typeof auth === 'string') return deny(auth);

  const identity = options.identities.find((i) => i.accessKeyId === auth.accessKeyId);
  if (!identity) return deny('unknown access key id');
  if (auth.region !== options.region) return deny('credential scope has the wrong region');
  if (auth.service !== service) return deny('credential scope has the wrong service');
  if (auth.terminator !== 'aws4_request') return deny('credential scope must end in aws4_request');

  const amzDate = Object.hasOwn(headers, 'x-amz-date') ? single(headers['x-amz-date']) : undefined;
  if (amzDate === undefined) return deny('missing X-Amz-Date header');
  const signedAt = parseAmzDate(amzDate);
  if (signedAt === undefined) return deny('malformed X-Amz-Date header');
  if (amzDate.slice(0, 8) !== auth.date)
    return deny('credential scope date differs from X-Amz-Date');
  const now = typeof options.now === 'number' ? options.now : options.now.getTime();
  if (Math.abs(now - signedAt) > MAX_CLOCK_SKEW_MS) {
    return deny('signature date is more than 5 minutes from the server clock');
  }

  const signed = auth.signedHeaders;
  if (signed.some((name) => name === '' || name !== name.toLowerCase())) {
    return deny('SignedHeaders must be lowercase names');
  }
  for (let i = 1; i < signed.length; i++) {
    if ((signed[i - 1] ?? '') >= (signed[i] ?? '')) {
      return deny('SignedHeaders must be sorted and unique');
    }
  }
  if (!signed.includes('host')) return deny('host is not a signed header');
  const canonicalHeaders: string[] = [];
  for (const name of signed) {
    const value = Object.hasOwn(headers, name) ? headers[name] : undefined;
    if (value === undefined) return deny('a signed header is missing from the request');
    canonicalHeaders.push(`${name}:${canonicalHeaderValue(value)}\n`);
  }

  const bodyHash = sha256Hex(request.body);
  let payloadHash = bodyHash;
  const contentSha = Object.hasOwn(headers, 'x-amz-content-sha256')
    ? headers['x-amz-content-sha256']
    : undefined;
  if (contentSha !== undefined) {
    const declared = single(contentSha);
    if (declared === undefined) return deny('repeated X-Amz-Content-Sha256 header');
    if (declared !== UNSIGNED_PAYLOAD && declared !== bodyHash) {
      return deny('X-Amz-Content-Sha256 does not match the body');
    }
    payloadHash = declared;
  }

  let query: string;
  let uri: string;
  try {
    query = canonicalQueryString(request.rawQueryString);
    uri = canonicalUri(request.path);
  } catch {
    return deny('malformed percent-encoding in the URL');
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
    return deny('signature does not match');
  }
  return { ok: true, identity };
}

// ---------------------------------------------------------------------------
// Event building (payload format 2.0)
// ---------------------------------------------------------------------------

const TEXT_CONTENT_TYPE =
  /^(text\/[^;]+|application\/(json|javascript|xml|x-www-form-urlencoded|[^;]+\+json|[^;]+\+xml)|[^;]+\/[^;]+\+(json|xml))\s*(;.*)?$/i;

/** Sets an own enumerable property, even one named `__proto__` or `constructor`. */
function setOwn<T>(target: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(target, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

function getOwn<T>(target: Record<string, T>, key: string): T | undefined {
  return Object.hasOwn(target, key) ? target[key] : undefined;
}

/** Lower-cased header names with every value sent for them, in order. */
function collectHeaders(rawHeaders: string[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = (rawHeaders[i] ?? '').toLowerCase();
    const value = rawHeaders[i + 1] ?? '';
    const list = getOwn(out, name);
    if (list) list.push(value);
    else setOwn(out, name, [value]);
  }
  return out;
}

/** `12/Mar/2020:19:03:58 +0000`, the format of `requestContext.time`. */
function clfTime(ms: number): string {
  const d = new Date(ms);
  const months = [
    'Jan',
    'Feb',
    'Mar',
    'Apr',
    'May',
    'Jun',
    'Jul',
    'Aug',
    'Sep',
    'Oct',
    'Nov',
    'Dec',
  ];
  const p = (n: number) => String(n).padStart(2, '0');
  return `${p(d.getUTCDate())}/${months[d.getUTCMonth()]}/${d.getUTCFullYear()}:${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`;
}

/** A stable IAM-style unique id for an ARN (AROA… for roles, AIDA… for users). */
function principalId(arn: string): string {
  const digest = createHash('sha256').update(arn).digest();
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let id = '';
  for (let i = 0; i < 17; i++) id += alphabet[(digest[i] ?? 0) % 32];
  const resource = arn.split(':').slice(5).join(':');
  if (resource.startsWith('assumed-role/')) {
    const session = resource.split('/').slice(2).join('/');
    return `AROA${id}:${session}`;
  }
  if (resource.startsWith('role/')) return `AROA${id}`;
  if (resource === 'root') return arn.split(':')[4] ?? id;
  return `AIDA${id}`;
}

interface EventInput {
  method: string;
  rawPath: string;
  rawQueryString: string;
  headers: Record<string, string[]>;
  body: Buffer;
  identity: LocalIdentity;
  apiId: string;
  sourceIp: string;
  httpVersion: string;
  requestId: string;
  now: number;
}

function buildEvent(input: EventInput): LambdaFunctionURLEventWithIAMAuthorizer {
  const headers: Record<string, string> = {};
  let cookies: string[] | undefined;
  for (const [name, values] of Object.entries(input.headers)) {
    if (name === 'cookie') {
      cookies = values
        .flatMap((v) => v.split(';'))
        .map((c) => c.trim())
        .filter((c) => c !== '');
      continue;
    }
    setOwn(headers, name, values.join(','));
  }

  let queryStringParameters: Record<string, string> | undefined;
  const pairs = parseQuery(input.rawQueryString);
  if (pairs.length > 0) {
    queryStringParameters = {};
    for (const [name, value] of pairs) {
      const prior = getOwn(queryStringParameters, name);
      setOwn(queryStringParameters, name, prior === undefined ? value : `${prior},${value}`);
    }
  }

  const host = (getOwn(headers, 'host') ?? '').replace(/:\d+$/, '');
  const accountId = input.identity.arn.split(':')[4] ?? '';
  const userId = principalId(input.identity.arn);

  let body: string | undefined;
  let isBase64Encoded = false;
  if (input.body.length > 0) {
    const contentType = getOwn(headers, 'content-type') ?? '';
    const text = TEXT_CONTENT_TYPE.test(contentType) ? decodeUtf8(input.body) : undefined;
    if (text === undefined) {
      body = input.body.toString('base64');
      isBase64Encoded = true;
    } else {
      body = text;
    }
  }

  const event: LambdaFunctionURLEventWithIAMAuthorizer = {
    version: '2.0',
    routeKey: '$default',
    rawPath: input.rawPath,
    rawQueryString: input.rawQueryString,
    ...(cookies && cookies.length > 0 ? { cookies } : {}),
    headers,
    ...(queryStringParameters ? { queryStringParameters } : {}),
    requestContext: {
      accountId: 'anonymous',
      apiId: input.apiId,
      authorizer: {
        iam: {
          accessKey: input.identity.accessKeyId,
          accountId,
          callerId: userId,
          cognitoIdentity: null,
          // AWS sends null here; the community type says string.
          principalOrgId: null as unknown as string,
          userArn: input.identity.arn,
          userId,
        },
      },
      domainName: host,
      domainPrefix: host.split('.')[0] ?? host,
      http: {
        method: input.method,
        path: input.rawPath,
        protocol: `HTTP/${input.httpVersion}`,
        sourceIp: input.sourceIp,
        userAgent: getOwn(headers, 'user-agent') ?? '',
      },
      requestId: input.requestId,
      routeKey: '$default',
      stage: '$default',
      time: clfTime(input.now),
      timeEpoch: input.now,
    },
    ...(body !== undefined ? { body } : {}),
    isBase64Encoded,
  };
  return event;
}

function decodeUtf8(bytes: Buffer): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------
// HTTP server
// ---------------------------------------------------------------------------

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  extra: Record<string, string> = {},
): void {
  const payload = Buffer.from(JSON.stringify(body));
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': String(payload.length),
    ...extra,
  });
  res.end(payload);
}

function writeResult(
  res: ServerResponse,
  result: LambdaFunctionURLResult,
  requestId: string,
): void {
  // Response inference, as Function URLs do: a string or an object without
  // statusCode is a 200 JSON body.
  let structured: APIGatewayProxyStructuredResultV2;
  if (typeof result === 'string') {
    structured = { statusCode: 200, body: result };
  } else if (
    result !== null &&
    typeof result === 'object' &&
    typeof (result as APIGatewayProxyStructuredResultV2).statusCode === 'number'
  ) {
    structured = result as APIGatewayProxyStructuredResultV2;
  } else {
    structured = { statusCode: 200, body: JSON.stringify(result ?? null) };
  }

  const headers: Record<string, string | string[]> = {};
  let hasContentType = false;
  for (const [name, value] of Object.entries(structured.headers ?? {})) {
    if (name.toLowerCase() === 'content-type') hasContentType = true;
    headers[name] = String(value);
  }
  if (!hasContentType) headers['Content-Type'] = 'application/json';
  if (structured.cookies && structured.cookies.length > 0) {
    headers['Set-Cookie'] = structured.cookies;
  }
  headers['x-amzn-RequestId'] = requestId;
  const raw = structured.body ?? '';
  const payload = structured.isBase64Encoded
    ? Buffer.from(raw, 'base64')
    : Buffer.from(raw, 'utf8');
  headers['Content-Length'] = String(payload.length);
  res.writeHead(structured.statusCode ?? 200, headers);
  res.end(payload);
}

class PayloadTooLargeError extends Error {
  override name = 'PayloadTooLargeError';
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > limit) {
        failed = true;
        chunks.length = 0;
        reject(new PayloadTooLargeError());
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (!failed) resolve(Buffer.concat(chunks));
    });
    req.on('error', (error) => {
      if (!failed) {
        failed = true;
        reject(error);
      }
    });
  });
}

export function startLocalFunctionUrl(options: LocalFunctionUrlOptions): Promise<LocalFunctionUrl> {
  const region = options.region ?? 'us-east-1';
  const host = options.host ?? '127.0.0.1';
  const identities = [...options.identities];
  const now = options.now ?? Date.now;
  // The URL id that forms the real URL's host name: 32 lower-case alphanumerics.
  const apiId = Array.from(
    randomBytes(32),
    (b) => 'abcdefghijklmnopqrstuvwxyz0123456789'[b % 36],
  ).join('');

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const requestId = randomUUID();
    const forbidden = (reason: string) => {
      options.onDenied?.(reason);
      sendJson(
        res,
        403,
        { Message: 'Forbidden' },
        {
          'x-amzn-ErrorType': 'AccessDeniedException',
          'x-amzn-RequestId': requestId,
        },
      );
    };

    let body: Buffer;
    try {
      body = await readBody(req, MAX_BODY_BYTES);
    } catch (error) {
      if (error instanceof PayloadTooLargeError) {
        sendJson(
          res,
          413,
          { Message: 'Request Entity Too Large' },
          {
            Connection: 'close',
            'x-amzn-RequestId': requestId,
          },
        );
      } else {
        res.destroy();
      }
      return;
    }

    // The request target as received: origin-form `/path?query` (absolute-form tolerated).
    let target = req.url ?? '/';
    const absolute = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(target);
    if (absolute) target = target.slice(absolute[0].length) || '/';
    const q = target.indexOf('?');
    const rawPath = q === -1 ? target : target.slice(0, q);
    const rawQueryString = q === -1 ? '' : target.slice(q + 1);

    const grouped = collectHeaders(req.rawHeaders);
    const verdict = verifySigV4(
      { method: req.method ?? 'GET', path: rawPath, rawQueryString, headers: grouped, body },
      { identities, region, now: now() },
    );
    if (!verdict.ok) {
      forbidden(verdict.reason);
      return;
    }

    const requestTime = Date.now();
    const sourceIp = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
    const port = req.socket.localPort ?? 0;
    // Headers the Function URL front end adds, as in AWS.
    const headers = grouped;
    if (getOwn(headers, 'x-amzn-trace-id') === undefined) {
      const root = `1-${Math.floor(requestTime / 1000).toString(16)}-${randomBytes(12).toString('hex')}`;
      setOwn(headers, 'x-amzn-trace-id', [`Root=${root}`]);
    }
    setOwn(headers, 'x-forwarded-for', [sourceIp]);
    setOwn(headers, 'x-forwarded-proto', ['http']);
    setOwn(headers, 'x-forwarded-port', [String(port)]);

    let event: LambdaFunctionURLEvent;
    try {
      event = buildEvent({
        method: req.method ?? 'GET',
        rawPath,
        rawQueryString,
        headers,
        body,
        identity: verdict.identity,
        apiId,
        sourceIp,
        httpVersion: req.httpVersion,
        requestId,
        now: requestTime,
      });
    } catch {
      // Unreachable in practice: the query already parsed during verification.
      sendJson(res, 400, { Message: 'Bad Request' }, { 'x-amzn-RequestId': requestId });
      return;
    }

    let result: LambdaFunctionURLResult;
    try {
      result = await options.handler(event);
    } catch {
      sendJson(res, 502, { Message: 'Internal Server Error' }, { 'x-amzn-RequestId': requestId });
      return;
    }
    try {
      writeResult(res, result, requestId);
    } catch {
      if (!res.headersSent) {
        sendJson(res, 502, { Message: 'Internal Server Error' }, { 'x-amzn-RequestId': requestId });
      } else {
        res.destroy();
      }
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) sendJson(res, 500, { Message: 'Internal Server Error' });
      else res.destroy();
    });
  });

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      const { port } = server.address() as AddressInfo;
      const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
      resolve({
        url,
        close: () =>
          new Promise<void>((done, fail) => {
            server.close((error) => (error ? fail(error) : done()));
            server.closeAllConnections();
          }),
      });
    });
  });
}
