import {
  InternalError,
  UpstreamCredentialsRejectedError,
  UpstreamError,
  UpstreamUnavailableError,
  VendError,
} from './errors.js';
import type { RefreshFailure } from './ports.js';

/** The error for callers arriving while a recent failed refresh backs off. */
export function recentFailure(code: string | undefined, retryAfter: number): VendError {
  switch (code) {
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

/** A failed refresh as recorded: when, and the SPEC code of its error. */
export function failureOf(error: unknown, atMs: number): RefreshFailure {
  return { atMs, code: error instanceof VendError ? error.code : 'internal_error' };
}

/**
 * The error to answer with while a failure recorded `backoffMs` or less ago
 * backs off, else undefined, so the provider is not hammered by every caller.
 */
export function backingOff(
  failure: RefreshFailure | undefined,
  nowMs: number,
  backoffMs: number,
): VendError | undefined {
  if (!failure || nowMs - failure.atMs >= backoffMs) return undefined;
  return recentFailure(failure.code, Math.ceil((backoffMs - (nowMs - failure.atMs)) / 1000));
}
