/**
 * Issues keys for one business application with one Idempotency-Key: the
 * unscoped token from the client library, retries of 429 / 5xx / network errors
 * / timeouts with backoff and full jitter through the injected clock, and one
 * token refresh after a 401.
 */
import type { Clock } from '../core/clock.js';
import type { CoreLogger } from '../core/token-service-types.js';
import { KeysEndpointError } from './errors.js';
import {
  type IssuedKeys,
  readKeysResponse,
  sendKeysRequest,
  unavailable,
} from './keys-endpoint.js';
import type { KeyJobMetric, UnscopedTokenSource } from './ports.js';

export interface KeysRequestConfig {
  readonly baseUrl: string;
  /** JSON text to send as the body; absent: no body. */
  readonly body?: string;
  /** Per attempt, answer body included. Default 10 000. */
  readonly timeoutMs?: number;
  /** Retries after the first attempt (401 refresh not counted). Default 2. */
  readonly maxRetries?: number;
  /** First backoff step, doubled each retry, full jitter. Default 500. */
  readonly backoffBaseMs?: number;
  /**
   * Longest Retry-After waited for inside a run. Default 10 000. A longer one ends
   * this run's attempts: the id stays pending for the next run, as the provider asked.
   */
  readonly maxRetryAfterMs?: number;
  /** `minTtl` asked for with the fresh token after a 401. Default 3600 (the vend API's maximum). */
  readonly refreshMinTtl?: number;
}

export interface KeysRequestDeps {
  readonly fetch: typeof fetch;
  readonly clock: Clock;
  readonly random: () => number;
  readonly tokens: UnscopedTokenSource;
  readonly logger: CoreLogger;
  readonly count: (metric: KeyJobMetric) => void;
}

export interface KeysCall {
  readonly businessApplicationId: string;
  readonly idempotencyKey: string;
  /** Runs before each request is sent (records the attempt, extends the lease); may throw. */
  readonly beforeAttempt: () => Promise<void>;
}

export const KEYS_REQUEST_DEFAULTS = {
  timeoutMs: 10_000,
  maxRetries: 2,
  backoffBaseMs: 500,
  maxRetryAfterMs: 10_000,
  refreshMinTtl: 3600,
} as const;

/**
 * The longest one id's keys request takes with the defaults and a token
 * source that answers within `tokenTimeoutMs` (the client library's timeout):
 * the token, a 401, a fresh token, then every attempt timing out with the
 * longest wait between them.
 */
export function longestKeysRequestMs(tokenTimeoutMs: number): number {
  const d = KEYS_REQUEST_DEFAULTS;
  const attempts = 1 + d.maxRetries + 1; // the retries, and the attempt after a 401
  return 2 * tokenTimeoutMs + attempts * d.timeoutMs + d.maxRetries * d.maxRetryAfterMs;
}

/**
 * Returns the provider's 2xx answer, or throws: a KeysEndpointError (its code is
 * the id's failure code), a TokenVendingError from the token fetch, or whatever
 * `beforeAttempt` throws.
 */
export async function requestKeys(
  deps: KeysRequestDeps,
  config: KeysRequestConfig,
  call: KeysCall,
): Promise<IssuedKeys> {
  const timeoutMs = config.timeoutMs ?? KEYS_REQUEST_DEFAULTS.timeoutMs;
  const maxRetries = config.maxRetries ?? KEYS_REQUEST_DEFAULTS.maxRetries;
  const backoffBaseMs = config.backoffBaseMs ?? KEYS_REQUEST_DEFAULTS.backoffBaseMs;
  const maxRetryAfterMs = config.maxRetryAfterMs ?? KEYS_REQUEST_DEFAULTS.maxRetryAfterMs;
  const refreshMinTtl = config.refreshMinTtl ?? KEYS_REQUEST_DEFAULTS.refreshMinTtl;
  const log = { businessApplicationId: call.businessApplicationId };

  let token = (await deps.tokens.getToken()).accessToken;
  let refreshed = false;
  for (let retries = 0; ; ) {
    await call.beforeAttempt();
    deps.count('KeysEndpointRequests');
    let failure: KeysEndpointError;
    try {
      const response = await sendKeysRequest(
        deps.fetch,
        {
          baseUrl: config.baseUrl,
          businessApplicationId: call.businessApplicationId,
          accessToken: token,
          idempotencyKey: call.idempotencyKey,
          ...(config.body === undefined ? {} : { body: config.body }),
        },
        AbortSignal.timeout(timeoutMs),
      );
      return await readKeysResponse(response, deps.clock.now());
    } catch (error) {
      failure = error instanceof KeysEndpointError ? error : unavailable(error);
    }
    deps.count('KeysEndpointErrors');

    if (failure.status === 401 && !refreshed) {
      // Our cached token may be stale or revoked: forget it, ask for one with more life, retry once.
      refreshed = true;
      deps.tokens.invalidate(null);
      const fresh = await deps.tokens.getToken({ minTtl: refreshMinTtl });
      deps.logger.warn('keys endpoint rejected the unscoped token; retrying with a fresh one', {
        ...log,
        tokenChanged: fresh.accessToken !== token,
      });
      token = fresh.accessToken;
      continue;
    }
    if (!failure.retryable || retries >= maxRetries) throw failure;
    const hintMs = failure.retryAfter === undefined ? 0 : failure.retryAfter * 1000;
    if (hintMs > maxRetryAfterMs) {
      deps.logger.warn(
        'keys endpoint asked to wait longer than a run waits; left for the next run',
        {
          ...log,
          status: failure.status,
          retryAfterSeconds: failure.retryAfter,
        },
      );
      throw failure;
    }
    const backoff = Math.floor(deps.random() * backoffBaseMs * 2 ** retries);
    const waitMs = Math.max(backoff, hintMs);
    retries += 1;
    deps.logger.warn('keys request failed; retrying with the same Idempotency-Key', {
      ...log,
      status: failure.status,
      code: failure.code,
      retry: retries,
      waitMs,
    });
    await deps.clock.sleep(waitMs);
  }
}
