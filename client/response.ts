import { TokenVendingError, type TokenVendingErrorCode } from './errors.js';
import { parseRetryAfter } from './retry-after.js';
import type { Token } from './types.js';
import { ACCESS_TOKEN_PATTERN, MAX_ACCESS_TOKEN_LENGTH, PROBLEM_CODES } from './vend-api.js';

/** One answer of the vend URL, as received. */
export interface VendAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: string;
}

/** The codes the vend API puts into its problem+json bodies (docs/vend-api.md). */
const PROBLEM_CODE_SET: ReadonlySet<string> = new Set<string>(PROBLEM_CODES);

/**
 * Answers without a problem body come from the Function URL front end itself
 * (for example 403 `{"Message":"Forbidden"}` for a bad signature or a missing
 * IAM permission, 429 when Lambda throttles). Their bodies are never echoed.
 */
function codeForStatus(status: number): { code: TokenVendingErrorCode; title: string } {
  switch (status) {
    case 400:
    case 413:
      return { code: 'invalid_request', title: `Bad request (HTTP ${status})` };
    case 401:
      return { code: 'unauthenticated', title: 'Unauthenticated' };
    case 403:
      return { code: 'access_denied', title: 'Forbidden by the Function URL (IAM)' };
    case 404:
      return { code: 'not_found', title: 'Not found' };
    case 405:
      return { code: 'method_not_allowed', title: 'Method not allowed' };
    case 429:
      return { code: 'throttled', title: 'Too many requests (HTTP 429)' };
    default:
      return status >= 500
        ? { code: 'internal_error', title: `Function URL error (HTTP ${status})` }
        : { code: 'unexpected_response', title: `Unexpected answer (HTTP ${status})` };
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A short single-line string from a problem field, or undefined. */
function problemText(value: unknown, max: number): string | undefined {
  if (typeof value !== 'string') return undefined;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping them is the point
  const text = value.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  if (text === '') return undefined;
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** The error for a non-200 answer: the problem's code and title when it sent one, else by status. */
export function errorFromAnswer(answer: VendAnswer, nowMs: number): TokenVendingError {
  const json = parseJson(answer.body);
  const retryAfter = parseRetryAfter(answer.headers.get('retry-after'), nowMs);
  const requestId = answer.headers.get('x-amzn-requestid') ?? undefined;
  const common = {
    status: answer.status,
    ...(retryAfter !== undefined ? { retryAfter } : {}),
    ...(requestId ? { requestId } : {}),
  };
  if (isRecord(json) && typeof json.code === 'string' && PROBLEM_CODE_SET.has(json.code)) {
    const fallback = codeForStatus(answer.status).title;
    const detail = problemText(json.detail, 500);
    return new TokenVendingError(
      json.code as TokenVendingErrorCode,
      problemText(json.title, 120) ?? fallback,
      { ...common, ...(detail ? { detail } : {}) },
    );
  }
  const { code, title } = codeForStatus(answer.status);
  return new TokenVendingError(code, title, common);
}

function invalid(reason: string, answer: VendAnswer): TokenVendingError {
  const requestId = answer.headers.get('x-amzn-requestid') ?? undefined;
  return new TokenVendingError('invalid_response', `Invalid token answer: ${reason}`, {
    status: answer.status,
    ...(requestId ? { requestId } : {}),
  });
}

/**
 * Validates a vend answer for the requested scope: a Token, or the
 * TokenVendingError to throw. Never puts the body into an error.
 */
export function parseVendAnswer(
  answer: VendAnswer,
  requestedScope: string | undefined,
  sentMs: number,
  nowMs: number = sentMs,
): Token {
  if (answer.status !== 200) throw errorFromAnswer(answer, nowMs);
  const json = parseJson(answer.body);
  if (!isRecord(json)) throw invalid('the body is not a JSON object', answer);
  const {
    access_token: accessToken,
    token_type: tokenType,
    expires_at: serverExpiresAt,
    expires_in: expiresIn,
    scope,
  } = json;
  if (typeof accessToken !== 'string' || accessToken === '') {
    throw invalid('access_token is missing', answer);
  }
  // Anything else cannot go into an Authorization header or an environment
  // variable: the errors that refuse it there quote the value (Node's
  // "must be a string without null bytes. Received '...'", undici's
  // "... is an invalid header value"), and such errors reach logs and stderr.
  if (accessToken.length > MAX_ACCESS_TOKEN_LENGTH || !ACCESS_TOKEN_PATTERN.test(accessToken)) {
    throw invalid('access_token is not a bearer token', answer);
  }
  if (typeof tokenType !== 'string' || tokenType.toLowerCase() !== 'bearer') {
    throw invalid('token_type is not Bearer', answer);
  }
  if (
    typeof serverExpiresAt !== 'number' ||
    !Number.isSafeInteger(serverExpiresAt) ||
    serverExpiresAt <= 0
  ) {
    throw invalid('expires_at is not epoch seconds', answer);
  }
  // Judge expiry by our own clock too: the earlier of the server's expires_at
  // and (when sent) the time we sent the request plus expires_in, so a client
  // clock behind the server's never keeps a token past its life.
  const expiresAt =
    typeof expiresIn === 'number' && Number.isFinite(expiresIn)
      ? Math.min(serverExpiresAt, Math.floor(sentMs / 1000) + Math.floor(expiresIn))
      : serverExpiresAt;
  if (expiresAt <= nowMs / 1000) throw invalid('the token has already expired', answer);
  if (scope !== undefined && scope !== null && typeof scope !== 'string') {
    throw invalid('scope is not a string', answer);
  }
  const answeredScope = typeof scope === 'string' && scope !== '' ? scope : undefined;
  if (answeredScope !== requestedScope) {
    throw invalid('scope differs from the one requested', answer);
  }
  return Object.freeze({
    accessToken,
    tokenType: 'Bearer',
    expiresAt,
    ...(answeredScope !== undefined ? { scope: answeredScope } : {}),
  });
}
