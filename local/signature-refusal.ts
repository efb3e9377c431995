/**
 * Why the local Function URL refused a signature, for the stack's log: the
 * check that failed, what is safe to say about the request, and a hint at the
 * usual mistake behind it. The caller still gets AWS's bare 403; this is for
 * the person reading the stack's output.
 *
 * A refusal never holds the secret, the signature, the session token, the
 * Authorization header or a query value (a presigned query carries a
 * signature). It may name the access key id, the credential scope's date,
 * region and service, and header and parameter names, as AWS's own logs do.
 */
import {
  canonicalQueryString,
  type DenialCheck,
  denialCheck,
  MAX_CLOCK_SKEW_MS,
  type ParsedAuthorization,
  parseAmzDate,
  parseAuthorization,
  parseQuery,
  type SigV4Credentials,
  type SigV4Options,
  type SigV4Request,
  verifySigV4,
} from './sigv4-verifier.js';

export interface SignatureRefusal {
  /** The check that failed: a key of DENIALS, e.g. `signature_mismatch`. */
  readonly check: DenialCheck | 'unknown';
  /** The verifier's fixed reason. */
  readonly reason: string;
  /** What to look at first. */
  readonly hint: string;
  readonly method: string;
  /** The path without the query. */
  readonly path: string;
  /** The access key id signed with, when it has the shape of one. */
  readonly accessKeyId?: string;
  /** The credential scope as signed (date, region, service), where each looks like one. */
  readonly scope?: { readonly date?: string; readonly region?: string; readonly service?: string };
  readonly signedHeaders?: readonly string[];
  /** X-Amz-Date minus this machine's clock, in seconds. */
  readonly skewSeconds?: number;
  /** The query's parameter names in the order sent; never their values. */
  readonly queryParameters?: readonly string[];
}

const ACCESS_KEY_ID = /^[A-Z0-9]{16,128}$/;
const MAX_PATH = 200;

function single(value: string | string[] | undefined): string | undefined {
  if (Array.isArray(value)) return value.length === 1 ? value[0] : undefined;
  return value;
}

function header(request: SigV4Request, name: string): string | undefined {
  return Object.hasOwn(request.headers, name) ? single(request.headers[name]) : undefined;
}

function queryNames(rawQueryString: string): string[] {
  try {
    return parseQuery(rawQueryString).map(([name]) => name.slice(0, 64));
  } catch {
    return [];
  }
}

/** The query as sent, its parameters sorted but neither decoded nor re-encoded. */
const sortedAsSent = (raw: string): string =>
  raw
    .split('&')
    .filter((part) => part !== '')
    .map((part) => (part.includes('=') ? part : `${part}=`))
    .sort()
    .join('&');

/**
 * The signature matched nothing: tell apart a query signed in another form
 * (tried with the caller's own key, so a match is certain) from a wrong
 * secret or a request changed after signing.
 */
function mismatchHint(request: SigV4Request, options: SigV4Options): string {
  const raw = request.rawQueryString;
  let canonical = raw;
  try {
    canonical = canonicalQueryString(raw);
  } catch {
    // The verifier refused malformed escapes before signing.
  }
  const signedAs = (canonicalQuery: (raw: string) => string) =>
    verifySigV4(request, { ...options, canonicalQuery }).ok;
  const order = [...new Set(queryNames(raw))].sort().join(', ');
  if (raw !== canonical) {
    if (signedAs((q) => q)) {
      return (
        'the client signed the query exactly as sent, but SigV4 signs its canonical form ' +
        `(parameters sorted by name: ${order}; names and values percent-encoded per RFC 3986). ` +
        'Send the query that way (curl --aws-sigv4 signs what you type), or let the signer build it'
      );
    }
    if (signedAs(sortedAsSent)) {
      return (
        'the client sorted the query but did not percent-encode it per RFC 3986 ' +
        '(space %20, ":" %3A, "+" %2B, "/" %2F; only A-Z a-z 0-9 - _ . ~ stay as they are)'
      );
    }
    return (
      'the query is not in canonical form (sorted by name, percent-encoded per RFC 3986) and ' +
      'the signature matches no other form of it either: check the secret, and send the query sorted and encoded'
    );
  }
  return (
    "the secret is not this access key id's (wrong secret), or the request changed after it was " +
    'signed (method, path, query, a signed header or the body). The demo secret is in .local/stack.json'
  );
}

function unknownKeyHint(id: string, options: SigV4Options): string {
  if (options.identities.some((i) => i.secretAccessKey === id || i.sessionToken === id)) {
    return 'the Credential holds a secret where the access key id belongs: key id and secret swapped?';
  }
  const known = options.identities
    .slice(0, 5)
    .map((i) => i.accessKeyId)
    .join(', ');
  const shape = ACCESS_KEY_ID.test(id)
    ? ''
    : 'this is not the shape of an access key id (16 to 128 of A-Z 0-9); ';
  return `${shape}the local URL knows ${known} (LOCAL_IDENTITIES, or the demo identity)`;
}

function skewOf(request: SigV4Request, options: SigV4Options): number | undefined {
  const signedAt = parseAmzDate(header(request, 'x-amz-date') ?? '');
  if (signedAt === undefined) return undefined;
  const now = typeof options.now === 'number' ? options.now : options.now.getTime();
  return Math.round((signedAt - now) / 1000);
}

/** The checks whose hint depends on the request (hintFor). */
type DynamicCheck =
  | 'missing_authorization'
  | 'unknown_access_key_id'
  | 'wrong_region'
  | 'wrong_service'
  | 'clock_skew'
  | 'signed_header_missing'
  | 'signature_mismatch';

const STATIC_HINTS: Record<Exclude<DenialCheck, DynamicCheck>, string> = {
  unsupported_scheme: 'the Authorization header must start "AWS4-HMAC-SHA256 " (SigV4)',
  malformed_authorization:
    'the Authorization header must be "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=..."',
  incomplete_authorization:
    'the Authorization header needs Credential, SignedHeaders and Signature',
  malformed_credential_scope:
    'Credential must be <access key id>/<yyyymmdd>/<region>/lambda/aws4_request',
  malformed_signature: 'Signature must be 64 lower-case hex digits',
  wrong_scope_terminator: 'the credential scope must end in aws4_request',
  unexpected_session_token:
    'a long-term key takes no X-Amz-Security-Token: is an AWS_SESSION_TOKEN left over in the environment?',
  missing_session_token:
    'these are temporary credentials: send their session token as X-Amz-Security-Token',
  repeated_session_token: 'send X-Amz-Security-Token once',
  wrong_session_token: 'the session token is not the one issued with these credentials',
  missing_date: 'send the signing time as X-Amz-Date (yyyymmddThhmmssZ)',
  malformed_date: 'X-Amz-Date must be yyyymmddThhmmssZ, in UTC',
  scope_date_mismatch: "the credential scope's date must be X-Amz-Date's day",
  signed_headers_not_lowercase: 'SignedHeaders lists lower-case header names',
  signed_headers_unsorted: 'SignedHeaders lists names sorted and once each, joined with ";"',
  host_not_signed: 'sign the Host header: SigV4 requires it in SignedHeaders',
  repeated_content_sha256: 'send X-Amz-Content-Sha256 once',
  content_sha256_mismatch: 'X-Amz-Content-Sha256 must be the hex SHA-256 of the body sent',
  malformed_url: 'the path or query has a malformed percent-escape',
};

function hintFor(
  check: DenialCheck | 'unknown',
  request: SigV4Request,
  options: SigV4Options,
  auth: ParsedAuthorization | undefined,
): string {
  const service = options.service ?? 'lambda';
  switch (check) {
    case 'missing_authorization':
      return queryNames(request.rawQueryString).some((n) => n.toLowerCase() === 'x-amz-signature')
        ? 'a presigned (query-string) signature is not taken here: sign with the Authorization header'
        : `the request is not signed: sign it with SigV4, service ${service}, region ${options.region}`;
    case 'unknown_access_key_id':
      return unknownKeyHint(auth?.accessKeyId ?? '', options);
    case 'wrong_region':
      return `signed for region ${safe(auth?.region) ?? '(not a region)'}; this URL checks ${options.region} (AWS_REGION of the stack)`;
    case 'wrong_service':
      return `signed for service ${safe(auth?.service) ?? '(not a service name)'}; a Function URL takes ${service}`;
    case 'clock_skew':
      return `X-Amz-Date is more than ${MAX_CLOCK_SKEW_MS / 60_000} minutes from this machine's clock: sign when you send, and check the clock`;
    case 'signed_header_missing': {
      const missing = (auth?.signedHeaders ?? []).filter((n) => !Object.hasOwn(request.headers, n));
      return `SignedHeaders names headers the request lacks: ${missing.join(', ')}`;
    }
    case 'signature_mismatch':
      return mismatchHint(request, options);
    case 'unknown':
      return 'see the reason';
    default:
      return STATIC_HINTS[check];
  }
}

/** A credential scope part, when it has the shape of a region, service or date. */
const safe = (value: string | undefined): string | undefined =>
  value !== undefined && /^[a-z0-9-]{1,64}$/.test(value) ? value : undefined;

/**
 * Explains a refusal by verifySigV4 (`reason`) of `request` under the same
 * `options`, with nothing secret in it.
 */
export function explainRefusal(
  request: SigV4Request,
  options: SigV4Options<SigV4Credentials>,
  reason: string,
): SignatureRefusal {
  const check = denialCheck(reason) ?? 'unknown';
  const authorization = header(request, 'authorization');
  const parsed = authorization === undefined ? undefined : parseAuthorization(authorization);
  const auth = typeof parsed === 'object' ? parsed : undefined;
  const keyId = auth?.accessKeyId;
  const isSecret = options.identities.some(
    (i) => i.secretAccessKey === keyId || i.sessionToken === keyId,
  );
  const names = queryNames(request.rawQueryString);
  const scope = auth && {
    ...(/^\d{8}$/.test(auth.date) ? { date: auth.date } : {}),
    ...(safe(auth.region) ? { region: auth.region } : {}),
    ...(safe(auth.service) ? { service: auth.service } : {}),
  };
  const skew = check === 'clock_skew' ? skewOf(request, options) : undefined;
  return {
    check,
    reason,
    hint: hintFor(check, request, options, auth),
    method: request.method.slice(0, 16),
    path: request.path.slice(0, MAX_PATH),
    ...(keyId !== undefined && ACCESS_KEY_ID.test(keyId) && !isSecret
      ? { accessKeyId: keyId }
      : {}),
    ...(scope && Object.keys(scope).length > 0 ? { scope } : {}),
    ...(auth ? { signedHeaders: auth.signedHeaders.map((n) => n.slice(0, 64)) } : {}),
    ...(skew === undefined ? {} : { skewSeconds: skew }),
    ...(names.length > 0 ? { queryParameters: names } : {}),
  };
}
