import { createHash } from 'node:crypto';
import { systemClock } from './clock.js';
import { defaultCredentials } from './credentials.js';
import { TokenVendingError } from './errors.js';
import { parseGrantsAnswer } from './grants.js';
import { localStackTarget } from './local-default.js';
import { isLoopback, resolveRegion } from './region.js';
import { parseVendAnswer } from './response.js';
import { VendRequestSigner } from './signed-request.js';
import { TokenCache } from './token-cache.js';
import { sendVendRequest, withDeadline } from './transport.js';
import type {
  AwsCredentials,
  AwsCredentialsProvider,
  ClientClock,
  FetchFunction,
  GetTokenOptions,
  Grants,
  Token,
  TokenVendingClientOptions,
} from './types.js';
import { MAX_MIN_TTL, SCOPE_PATTERN } from './vend-api.js';

export const DEFAULT_MIN_TTL = 300;

/** The longest delay a Node.js timer takes (2^31 - 1 ms). */
const MAX_TIMER_MS = 2_147_483_647;
/**
 * The vend function's own timeout (30 s) and a margin for its cold start and
 * the network. Its slowest answer that still succeeds comes within it: 13 s
 * waiting on another instance's refresh, then a mint of up to 10 s when that
 * instance died. A shorter default would abandon such a vend (and retry into
 * the same wait) instead of receiving its token.
 */
export const DEFAULT_TIMEOUT_MS = 35_000;
export const DEFAULT_MAX_RETRIES = 2;
/** As long as one attempt may take, so that a retry after a quick 503 may take as long. */
export const DEFAULT_RETRY_BUDGET_MS = DEFAULT_TIMEOUT_MS;
/** Wait before retrying a 503 that carries no Retry-After, doubled on each retry. */
const FALLBACK_RETRY_MS = 1000;
/**
 * Wait before retrying a 429 (Lambda throttled the function: every instance
 * busy), doubled on each retry, and jittered to between half and all of it,
 * so callers throttled together do not come back together.
 */
const THROTTLED_RETRY_MS = 400;

/** A retry is not started with less time than this left in the budget. */
const MIN_ATTEMPT_MS = 100;

/** Why a request cannot be valid, or undefined: a bad call fails before any request. */
function checkRequest(scope: string | undefined, minTtl: number): string | undefined {
  if (!Number.isInteger(minTtl) || minTtl < 0 || minTtl > MAX_MIN_TTL) {
    return `minTtl must be an integer from 0 to ${MAX_MIN_TTL}`;
  }
  if (scope !== undefined && !SCOPE_PATTERN.test(scope)) {
    return `scope must match ${SCOPE_PATTERN.source}`;
  }
  return undefined;
}

const cacheKey = (scope: string | undefined): string =>
  scope === undefined ? '~unscoped' : `scope:${scope}`;

/** The vend function's token fingerprint: the first 16 hex digits of the token's SHA-256. */
const fingerprint = (token: string): string =>
  createHash('sha256').update(token, 'utf8').digest('hex').slice(0, 16);

interface Target {
  readonly base: URL;
  readonly region: string;
  readonly credentials: AwsCredentials | AwsCredentialsProvider | undefined;
}

function validate(options: TokenVendingClientOptions): Target {
  const problems: string[] = [];
  const local = localStackTarget(options, process.cwd());
  if (local && 'problem' in local) problems.push(local.problem);
  const target = local && 'url' in local ? local : undefined;
  const url = target?.url ?? options.url;
  let base: URL | undefined;
  if (url !== undefined) {
    try {
      base = new URL(url);
      if (base.protocol !== 'https:' && base.protocol !== 'http:') {
        problems.push('url must be an http(s) URL');
      } else if (base.protocol === 'http:' && !isLoopback(base)) {
        // The answers carry bearer tokens: they never cross a network in clear.
        problems.push(
          'url must be https: unless its host is loopback (localhost, 127.0.0.0/8, [::1])',
        );
      } else if (base.search !== '' || base.hash !== '' || base.username || base.password) {
        problems.push('url must have no query, fragment or user info');
      }
    } catch {
      problems.push('url is not a valid URL');
    }
  }
  const positive = (name: string, value: number | undefined, integer = false) => {
    if (value === undefined) return;
    if (!Number.isFinite(value) || value < 0 || (integer && !Number.isInteger(value))) {
      problems.push(`${name} must be a non-negative ${integer ? 'integer' : 'number'}`);
    }
  };
  // Node.js runs a longer timer at once (after 1 ms, with a TimeoutOverflowWarning).
  const timer = (name: string, value: number | undefined) => {
    if (value !== undefined && value > MAX_TIMER_MS) {
      problems.push(`${name} must be at most ${MAX_TIMER_MS} (about 24.8 days)`);
    }
  };
  positive('timeoutMs', options.timeoutMs);
  timer('timeoutMs', options.timeoutMs);
  if (options.timeoutMs === 0) problems.push('timeoutMs must be more than 0');
  positive('maxRetries', options.maxRetries, true);
  positive('retryBudgetMs', options.retryBudgetMs);
  timer('retryBudgetMs', options.retryBudgetMs);
  const region =
    options.region ||
    target?.region ||
    (base ? resolveRegion(base, process.env) : undefined) ||
    undefined;
  if (base && !region) {
    problems.push(`region cannot be derived from ${base.host}: pass region, or set AWS_REGION`);
  }
  if (problems.length > 0 || !base || !region) {
    throw new TokenVendingError('invalid_config', problems.join('; '), { status: 0 });
  }
  return { base, region, credentials: target?.credentials ?? options.credentials };
}

/**
 * Gets bearer tokens from the token vending Function URL: signs each request
 * with SigV4 (service `lambda`), caches tokens per scope in this process,
 * shares one request among concurrent callers of a scope, and retries 503
 * answers as `Retry-After` asks and 429s (Lambda throttled) after a jittered
 * back-off. Never logs; errors never carry a token.
 */
export class TokenVendingClient {
  readonly #signer: VendRequestSigner;
  readonly #fetch: FetchFunction;
  readonly #clock: ClientClock;
  readonly #random: () => number;
  readonly #timeoutMs: number;
  readonly #maxRetries: number;
  readonly #retryBudgetMs: number;
  readonly #cache: TokenCache;
  /** Per cache key: the fingerprint of a token `invalidate` dropped, reported on the next request. */
  readonly #revoked = new Map<string, string>();

  /** @throws TokenVendingError `invalid_config`, listing every problem with the options. */
  constructor(options: TokenVendingClientOptions = {}) {
    const { base, region, credentials } = validate(options);
    this.#signer = new VendRequestSigner(base, region, credentials ?? defaultCredentials());
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? Math.random;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
    this.#retryBudgetMs = options.retryBudgetMs ?? DEFAULT_RETRY_BUDGET_MS;
    this.#cache = new TokenCache(this.#clock);
  }

  /**
   * A token for `scope` (absent: the unscoped token) with more than `minTtl`
   * seconds left (default 300), from the cache when it has one.
   *
   * @throws TokenVendingError
   */
  getToken(options: GetTokenOptions = {}): Promise<Token> {
    const { scope } = options;
    const minTtl = options.minTtl ?? DEFAULT_MIN_TTL;
    const problem = checkRequest(scope, minTtl);
    if (problem)
      return Promise.reject(new TokenVendingError('invalid_request', problem, { status: 0 }));
    return this.#cache.get(cacheKey(scope), minTtl, () =>
      this.#withRetries((timeoutMs) => this.#fetchOnce(scope, minTtl, timeoutMs)),
    );
  }

  /** `Bearer <token>`, for an `Authorization` header. */
  async authorizationHeader(scope?: string, options: { minTtl?: number } = {}): Promise<string> {
    const token = await this.getToken({
      ...(scope !== undefined ? { scope } : {}),
      ...(options.minTtl !== undefined ? { minTtl: options.minTtl } : {}),
    });
    return `${token.tokenType} ${token.accessToken}`;
  }

  /**
   * What the vend function grants this caller (`GET /grants`): its principal
   * as the function sees it, its scopes and whether it may have the unscoped
   * token. Never cached; retried as a token request is.
   *
   * @throws TokenVendingError
   */
  getGrants(): Promise<Grants> {
    return this.#withRetries(async (timeoutMs) => {
      const answer = await withDeadline(timeoutMs, this.#signer.host, async (signal) => {
        const request = await this.#signer.sign('grants', {});
        return sendVendRequest(this.#fetch, request, signal);
      });
      return parseGrantsAnswer(answer, this.#clock.now());
    });
  }

  /**
   * Forgets the cached token of one scope (`null` for the unscoped one), or
   * every cached token when called without an argument. Call it when the
   * provider refused the token (401): the next request for that scope names
   * the dropped token (`revoked=<fingerprint>`), so the vend function replaces
   * it instead of serving it again, however long it has left.
   */
  invalidate(scope?: string | null): void {
    const dropped = this.#cache.delete(
      scope === undefined ? undefined : cacheKey(scope ?? undefined),
    );
    for (const [key, token] of dropped) this.#revoked.set(key, fingerprint(token.accessToken));
  }

  /** Runs `once` and retries a 503 or 429 as the options allow; `once` gets its time limit. */
  async #withRetries<T>(once: (timeoutMs: number) => Promise<T>): Promise<T> {
    const started = this.#clock.now();
    for (let attempt = 0; ; attempt++) {
      // Retries get what is left of the budget, so the budget bounds the total time.
      const timeoutMs =
        attempt === 0
          ? this.#timeoutMs
          : Math.min(this.#timeoutMs, this.#retryBudgetMs - (this.#clock.now() - started));
      try {
        return await once(timeoutMs);
      } catch (error) {
        if (
          !(error instanceof TokenVendingError) ||
          (error.status !== 503 && error.status !== 429) ||
          attempt >= this.#maxRetries
        ) {
          throw error;
        }
        const asked = error.retryAfter === undefined ? undefined : error.retryAfter * 1000;
        const waitMs =
          error.status === 429
            ? // Jittered even under a Retry-After, which every throttled caller got alike.
              Math.max(
                asked ?? 0,
                Math.round(THROTTLED_RETRY_MS * 2 ** attempt * (0.5 + this.#random() / 2)),
              )
            : (asked ?? FALLBACK_RETRY_MS * 2 ** attempt);
        if (this.#clock.now() - started + waitMs + MIN_ATTEMPT_MS > this.#retryBudgetMs)
          throw error;
        await this.#clock.sleep(waitMs);
      }
    }
  }

  async #fetchOnce(scope: string | undefined, minTtl: number, timeoutMs: number): Promise<Token> {
    const query: Record<string, string> = { min_ttl: String(minTtl) };
    if (scope !== undefined) query.scope = scope;
    const revoked = this.#revoked.get(cacheKey(scope));
    if (revoked !== undefined) query.revoked = revoked;
    const sentMs = this.#clock.now();
    const answer = await withDeadline(timeoutMs, this.#signer.host, async (signal) => {
      const request = await this.#signer.sign('token', query);
      return sendVendRequest(this.#fetch, request, signal);
    });
    const token = parseVendAnswer(answer, scope, sentMs, this.#clock.now());
    if (revoked !== undefined && this.#revoked.get(cacheKey(scope)) === revoked) {
      this.#revoked.delete(cacheKey(scope));
    }
    return token;
  }
}
