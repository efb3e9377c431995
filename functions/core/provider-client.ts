import * as v from 'valibot';
import type { Clock } from './clock.js';
import {
  UpstreamCredentialsRejectedError,
  UpstreamError,
  UpstreamUnavailableError,
  VendError,
} from './errors.js';
import type { ProviderCredentials } from './ports.js';
import { readLimited } from './read-limited.js';
import { retryAfterSecondsOf } from './retry-after.js';

/** How the provider wants an unscoped token requested (its document leaves it open). */
export type UnscopedScopeMode = 'omit' | 'empty';

export interface ProviderClientConfig {
  /** e.g. https://api.provider.example (no trailing slash needed). */
  readonly baseUrl: string;
  readonly unscopedScopeMode: UnscopedScopeMode;
  /** Per attempt. Default 3000. */
  readonly timeoutMs?: number;
  /** Retries after the first attempt. Default 2. */
  readonly maxRetries?: number;
  /** First backoff step; doubled each retry, full jitter. Default 200. */
  readonly backoffBaseMs?: number;
  /** Longest Retry-After honoured between attempts. Default 5000. */
  readonly maxRetryAfterMs?: number;
}

export interface ProviderClientDeps {
  readonly fetch: typeof fetch;
  readonly clock: Clock;
  readonly random: () => number;
}

/** A validated token response. */
export interface TokenGrant {
  readonly accessToken: string;
  readonly tokenType: 'Bearer';
  readonly expiresIn: number;
  readonly scope?: string;
  /** The provider's created_at in epoch seconds (it may send seconds or milliseconds). */
  readonly createdAt?: number;
}

/** Sends one token request and returns the raw response (no validation). */
export function sendTokenRequest(
  deps: Pick<ProviderClientDeps, 'fetch'>,
  config: ProviderClientConfig,
  credentials: ProviderCredentials,
  scope: string | undefined,
  signal: AbortSignal,
): Promise<Response> {
  const body = new URLSearchParams({ grant_type: 'client_credentials' });
  if (scope !== undefined) body.set('scope', scope);
  else if (config.unscopedScopeMode === 'empty') body.set('scope', '');
  const basic = Buffer.from(`${credentials.key}:${credentials.secret}`, 'utf8').toString('base64');
  return deps.fetch(`${config.baseUrl.replace(/\/+$/, '')}/oauth/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${basic}`,
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    },
    body: body.toString(),
    signal,
    // Not 'error': fetch would throw as for a network failure, and a definite
    // answer would be retried and reported as the provider being unreachable.
    redirect: 'manual',
  });
}

/**
 * Longest `expires_in` accepted, in seconds (7 days). The provider's document
 * says 7200; anything far above it is a broken answer, not a token to cache.
 */
export const MAX_EXPIRES_IN_SECONDS = 604_800;

/**
 * Longest `access_token` accepted, in characters. Far above any token format in
 * use (JWTs with large claim sets run to 2-4 KB) and at the 8 KB per-header line
 * most HTTP servers allow, so a longer token could not be sent in a header anyway.
 */
export const MAX_ACCESS_TOKEN_LENGTH = 8192;

/** RFC 6750 `b64token`: all a bearer token may contain, so it is safe in an Authorization header. */
export const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

const TokenResponseSchema = v.object({
  access_token: v.pipe(
    v.string(),
    v.maxLength(MAX_ACCESS_TOKEN_LENGTH),
    v.regex(B64TOKEN), // also rejects ''
  ),
  token_type: v.pipe(
    v.string(),
    v.check((t) => t.toLowerCase() === 'bearer', 'token_type is not Bearer'),
  ),
  expires_in: v.pipe(
    v.number('expires_in is missing or not a number'),
    v.integer('expires_in is not an integer'),
    v.minValue(1, 'expires_in is not positive'),
    v.maxValue(MAX_EXPIRES_IN_SECONDS, 'expires_in is too large'),
  ),
  scope: v.optional(v.string()),
  created_at: v.optional(v.pipe(v.number(), v.finite())),
});

/**
 * Largest token response read: a few hundred bytes are normal; 16 KiB holds
 * the longest access_token accepted (8192 characters) with room to spare.
 */
export const MAX_TOKEN_RESPONSE_BYTES = 16 * 1024;

/** Longest Retry-After passed on to our callers, in seconds. */
const MAX_RETRY_AFTER_TO_CALLERS = 60;

/** Milliseconds timestamps are 1000x larger than any plausible seconds one. */
const MS_THRESHOLD = 100_000_000_000;

/**
 * Validates a token response for the requested scope. Returns the grant, or
 * throws the vend API error. Never puts the response body in an error.
 */
export async function parseTokenResponse(
  response: Response,
  requestedScope: string | undefined,
): Promise<TokenGrant> {
  if (response.status !== 200) {
    // Error bodies are never read (they could echo what we sent); free the socket.
    await response.body?.cancel().catch(() => undefined);
    if (response.status === 401 || response.status === 403) {
      throw new UpstreamCredentialsRejectedError(
        `The provider rejected our key and secret (HTTP ${response.status}).`,
      );
    }
    if (response.status === 429 || response.status >= 500) {
      throw new UpstreamUnavailableError(
        `The provider answered HTTP ${response.status}.`,
        Math.min(retryAfterSeconds(response) ?? 5, MAX_RETRY_AFTER_TO_CALLERS),
      );
    }
    throw new UpstreamError(`The provider answered HTTP ${response.status}.`);
  }
  let bytes: Uint8Array | undefined;
  try {
    bytes = await readLimited(response, MAX_TOKEN_RESPONSE_BYTES);
  } catch (error) {
    // The body stalled past the timeout or the connection dropped: retryable, not malformed.
    throw new UpstreamUnavailableError(describeNetworkError(error), 5, { cause: error });
  }
  if (bytes === undefined) {
    throw new UpstreamError(`The token response is larger than ${MAX_TOKEN_RESPONSE_BYTES} bytes.`);
  }
  const text = new TextDecoder().decode(bytes);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new UpstreamError('The token response is not JSON.');
  }
  const result = v.safeParse(TokenResponseSchema, json);
  if (!result.success) {
    const issue = result.issues[0];
    const field = issue ? v.getDotPath(issue) : undefined;
    // Only the field path: valibot's message could quote what the provider sent.
    throw new UpstreamError(`Malformed token response${field ? ` (${field})` : ''}.`);
  }
  const body = result.output;
  const echoed = body.scope === '' ? undefined : body.scope;
  // A scoped token must echo its scope: a server that drops a scope it does not
  // know grants no scope and may say nothing (oidc-provider does, interop test).
  if ((body.scope !== undefined || requestedScope !== undefined) && echoed !== requestedScope) {
    throw new UpstreamError('The token response names a different scope than requested.');
  }
  const createdAt =
    body.created_at === undefined
      ? undefined
      : body.created_at >= MS_THRESHOLD
        ? Math.floor(body.created_at / 1000)
        : Math.floor(body.created_at);
  return {
    accessToken: body.access_token,
    tokenType: 'Bearer',
    expiresIn: body.expires_in,
    ...(requestedScope === undefined ? {} : { scope: requestedScope }),
    ...(createdAt === undefined ? {} : { createdAt }),
  };
}

/** Retry-After in whole seconds (delta-seconds or HTTP date), if the response has one. */
export function retryAfterSeconds(response: Response, nowMs = Date.now()): number | undefined {
  return retryAfterSecondsOf(response.headers.get('retry-after'), nowMs);
}

/**
 * Requests a token: one attempt plus up to `maxRetries` retries on network
 * errors, timeouts, 429 and 5xx, with exponential backoff and full jitter,
 * honouring Retry-After up to `maxRetryAfterMs` (a longer one ends the
 * attempts: retrying before it would only be refused again). Other 4xx and
 * redirects are not retried; a redirect is never followed (it would carry
 * our Basic credentials elsewhere) and is an unexpected answer.
 * Nothing is waited for past `deadlineMs` (the end of the caller's lease: a
 * request still out after it could mint a second token once another instance
 * takes the lease over): each attempt's timeout is cut to the time left, no
 * attempt starts once it has passed, and no retry starts that could not
 * finish before it.
 */
export async function requestToken(
  deps: ProviderClientDeps,
  config: ProviderClientConfig,
  credentials: ProviderCredentials,
  scope: string | undefined,
  deadlineMs = Number.POSITIVE_INFINITY,
): Promise<TokenGrant> {
  const timeoutMs = config.timeoutMs ?? 3000;
  const maxRetries = config.maxRetries ?? 2;
  const backoffBaseMs = config.backoffBaseMs ?? 200;
  const maxRetryAfterMs = config.maxRetryAfterMs ?? 5000;
  for (let attempt = 0; ; attempt++) {
    let failure: UpstreamUnavailableError;
    /** The provider's own Retry-After, if it sent one (the error's default is for our callers). */
    let hintedSeconds: number | undefined;
    const leftMs = deadlineMs - deps.clock.now();
    if (leftMs <= 0) {
      throw new UpstreamUnavailableError('No time was left to ask the provider.', 5);
    }
    try {
      const response = await sendTokenRequest(
        deps,
        config,
        credentials,
        scope,
        AbortSignal.timeout(Math.min(timeoutMs, leftMs)),
      );
      hintedSeconds = retryAfterSeconds(response, deps.clock.now());
      return await parseTokenResponse(response, scope);
    } catch (error) {
      if (error instanceof VendError && !(error instanceof UpstreamUnavailableError)) throw error;
      failure =
        error instanceof UpstreamUnavailableError
          ? error
          : new UpstreamUnavailableError(describeNetworkError(error), 5, { cause: error });
    }
    if (attempt >= maxRetries) throw failure;
    // A provider that asks for longer than we may wait is not asked again
    // sooner: the caller gets its hint (up to a minute) with the 503.
    if (hintedSeconds !== undefined && hintedSeconds * 1000 > maxRetryAfterMs) throw failure;
    const backoff = Math.floor(deps.random() * backoffBaseMs * 2 ** attempt);
    const wait = Math.max(backoff, (hintedSeconds ?? 0) * 1000);
    if (deps.clock.now() + wait + timeoutMs > deadlineMs) throw failure;
    await deps.clock.sleep(wait);
  }
}

function describeNetworkError(error: unknown): string {
  if (error instanceof Error && error.name === 'TimeoutError') {
    return 'The provider did not answer in time.';
  }
  return 'The provider could not be reached.';
}
