import {
  InternalError,
  SealerUnavailableError,
  StoreUnavailableError,
  UpstreamCredentialsRejectedError,
  UpstreamError,
  UpstreamUnavailableError,
  VendError,
} from './errors.js';
import type { RefreshFailure } from './ports.js';

/**
 * The failure recorded when a minted token could not be sealed: not a vend
 * API code, since no caller is answered with it. Callers that see it serve
 * degraded for the back-off (each instance mints for itself, as without
 * DynamoDB) instead of taking the lease over one after another, each waiting
 * out KMS's timeout before giving it up again. After the back-off one caller
 * tries KMS again under the lease.
 */
export const SEALER_UNAVAILABLE = 'sealer_unavailable';

/** What a caller gets while a recent failure backs off: an answer, or degraded service. */
export type BackoffError = VendError | SealerUnavailableError;

/** The error for callers arriving while a recent failed refresh backs off. */
export function recentFailure(code: string | undefined, retryAfter: number): BackoffError {
  switch (code) {
    case SEALER_UNAVAILABLE:
      return new SealerUnavailableError('KMS failed to seal a new token moments ago.');
    case 'upstream_credentials_rejected':
      return new UpstreamCredentialsRejectedError(
        'The provider rejected our key and secret moments ago.',
      );
    case 'upstream_error':
      return new UpstreamError('The provider answered unexpectedly moments ago.');
    case 'internal_error':
      return new InternalError();
    default:
      return new UpstreamUnavailableError(
        'The provider failed moments ago; try again shortly.',
        retryAfter,
      );
  }
}

/**
 * The error of a failed refresh as its caller gets it, once the failure is
 * recorded: a Retry-After shorter than the back-off the record now starts (a
 * provider's `Retry-After: 0`, say) would send the caller back only to be
 * answered from the back-off, so it is raised to the back-off's length.
 */
export function afterRecordedFailure(error: unknown, backoffMs: number): unknown {
  const backoffSeconds = Math.ceil(backoffMs / 1000);
  if (!(error instanceof UpstreamUnavailableError) || error.retryAfter >= backoffSeconds) {
    return error;
  }
  return new UpstreamUnavailableError(error.message, backoffSeconds, { cause: error });
}

/** DynamoDB failed: a refresh's code in reports, never recorded in the item (it could not be). */
export const STORE_UNAVAILABLE = 'store_unavailable';

/**
 * The code of a failed refresh, for its record and its reports: the vend API
 * code of its error, or what kept the cache from working.
 */
export function failureCode(error: unknown): string {
  if (error instanceof VendError) return error.code;
  if (error instanceof SealerUnavailableError) return SEALER_UNAVAILABLE;
  if (error instanceof StoreUnavailableError) return STORE_UNAVAILABLE;
  return 'internal_error';
}

/**
 * The longest back-off a failure record can start, whatever the provider
 * asked for: the most Retry-After passed on to callers (provider-client.ts).
 */
export const MAX_FAILURE_BACKOFF_MS = 60_000;

/**
 * A failed refresh as recorded: when, its code (failureCode), and for an
 * outage the provider's Retry-After as the caller got it (at most 60 s).
 */
export function failureOf(error: unknown, atMs: number): RefreshFailure {
  const code = failureCode(error);
  return error instanceof UpstreamUnavailableError && error.retryAfter > 0
    ? { atMs, code, retryAfterSeconds: error.retryAfter }
    : { atMs, code };
}

/**
 * How long `failure` backs off: `backoffMs`, or the provider's longer
 * Retry-After it records, never over MAX_FAILURE_BACKOFF_MS (a record read
 * from the table is bounded whatever it holds).
 */
export function backoffOf(failure: RefreshFailure, backoffMs: number): number {
  const asked = (failure.retryAfterSeconds ?? 0) * 1000;
  return Math.max(backoffMs, Math.min(asked, MAX_FAILURE_BACKOFF_MS));
}

/**
 * The error to answer with while a failure backs off (backoffOf), else
 * undefined, so the provider is not hammered by every caller.
 */
export function backingOff(
  failure: RefreshFailure | undefined,
  nowMs: number,
  backoffMs: number,
): BackoffError | undefined {
  if (!failure) return undefined;
  const length = backoffOf(failure, backoffMs);
  if (nowMs - failure.atMs >= length) return undefined;
  return recentFailure(failure.code, Math.ceil((length - (nowMs - failure.atMs)) / 1000));
}

/** The same failure record: a waiter or back-off keyed on it notices a new one. */
export function sameFailure(a: RefreshFailure | undefined, b: RefreshFailure | undefined): boolean {
  return (
    a !== undefined &&
    b !== undefined &&
    a.atMs === b.atMs &&
    a.code === b.code &&
    a.retryAfterSeconds === b.retryAfterSeconds
  );
}

/**
 * The back-off after a failed refresh recorded in the shared item, judged by
 * this instance's clock. `failed_at` is a time on the failing instance's
 * clock, so this instance believes it only up to its own first sight of the
 * record: a failure happened no later than when it was first seen here, and a
 * writer whose clock runs ahead cannot stretch the back-off past `backoffMs`
 * from then. (One whose clock lags shortens it; that cannot be told apart
 * from an old failure, and the lease still lets one caller at a time retry.)
 */
export class FailureBackoff {
  readonly #backoffMs: number;
  readonly #firstSeen = new Map<
    string,
    { readonly failure: RefreshFailure; readonly atMs: number }
  >();

  constructor(backoffMs: number) {
    this.#backoffMs = backoffMs;
  }

  /** The error to answer `key`'s callers with while `failure` backs off, else undefined. */
  check(key: string, failure: RefreshFailure | undefined, nowMs: number): BackoffError | undefined {
    if (!failure) {
      this.#firstSeen.delete(key);
      return undefined;
    }
    let seen = this.#firstSeen.get(key);
    if (!seen || !sameFailure(seen.failure, failure)) {
      seen = { failure, atMs: nowMs };
      this.#firstSeen.set(key, seen);
    }
    const happenedMs = Math.min(failure.atMs, seen.atMs);
    return backingOff({ ...failure, atMs: happenedMs }, nowMs, this.#backoffMs);
  }
}
