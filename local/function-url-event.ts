/**
 * The payload format 2.0 event an IAM-authorized Lambda Function URL passes to
 * its function: headers as the front end forwards them (plus its own
 * `x-amzn-trace-id` and `x-forwarded-*`), decoded query parameters, cookies,
 * the body (base64 unless text) and the caller's IAM identity.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { LambdaFunctionURLEventWithIAMAuthorizer } from 'aws-lambda';
import { parseQuery } from './sigv4-verifier.js';

/** The IAM principal a verified request came from. */
export interface FunctionUrlCaller {
  readonly accessKeyId: string;
  /** `requestContext.authorizer.iam.userArn`. */
  readonly arn: string;
}

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
export function collectHeaders(rawHeaders: string[]): Record<string, string[]> {
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

export interface FunctionUrlEventInput {
  method: string;
  /** The path as received, percent-encoded, without the query. */
  rawPath: string;
  /** The query as received, without `?`. */
  rawQueryString: string;
  /** As received: lower-cased names, every value sent (see collectHeaders). */
  headers: Record<string, string[]>;
  body: Buffer;
  caller: FunctionUrlCaller;
  /** The URL id that forms the real URL's host name. */
  apiId: string;
  sourceIp: string;
  /** The port the request arrived on (`x-forwarded-port`). */
  localPort: number;
  httpVersion: string;
  requestId: string;
  /** Epoch milliseconds. */
  now: number;
}

/** The received headers plus those the Function URL front end adds, as in AWS. */
function forwardedHeaders(input: FunctionUrlEventInput): Record<string, string[]> {
  const headers: Record<string, string[]> = {};
  for (const [name, values] of Object.entries(input.headers)) setOwn(headers, name, values);
  if (getOwn(headers, 'x-amzn-trace-id') === undefined) {
    const root = `1-${Math.floor(input.now / 1000).toString(16)}-${randomBytes(12).toString('hex')}`;
    setOwn(headers, 'x-amzn-trace-id', [`Root=${root}`]);
  }
  setOwn(headers, 'x-forwarded-for', [input.sourceIp]);
  setOwn(headers, 'x-forwarded-proto', ['http']);
  setOwn(headers, 'x-forwarded-port', [String(input.localPort)]);
  return headers;
}

/** Throws on a malformed percent-escape in the query (verification rejects those first). */
export function buildFunctionUrlEvent(
  input: FunctionUrlEventInput,
): LambdaFunctionURLEventWithIAMAuthorizer {
  const headers: Record<string, string> = {};
  let cookies: string[] | undefined;
  for (const [name, values] of Object.entries(forwardedHeaders(input))) {
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
  const accountId = input.caller.arn.split(':')[4] ?? '';
  const userId = principalId(input.caller.arn);

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
          accessKey: input.caller.accessKeyId,
          accountId,
          callerId: userId,
          cognitoIdentity: null,
          // AWS sends null here; the community type says string.
          principalOrgId: null as unknown as string,
          userArn: input.caller.arn,
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
