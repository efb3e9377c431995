/** What happened to one id of a run, and how errors are named in its failure and logs. */
import { TokenVendingError } from '../../client/index.js';
import type { CoreLogger } from '../core/token-service-types.js';
import { type FailureCode, isRunCode, KeyIssuingError } from './errors.js';

export type IdOutcome =
  | { readonly kind: 'issued'; readonly recovered: boolean }
  | { readonly kind: 'skipped' }
  | { readonly kind: 'failed'; readonly code: FailureCode };

export const failed = (code: FailureCode): IdOutcome => ({ kind: 'failed', code });

/** The failure code of anything thrown while working on an id. */
export function failureCodeOf(error: unknown): FailureCode {
  if (error instanceof KeyIssuingError && !isRunCode(error.code)) return error.code;
  if (error instanceof TokenVendingError) return error.code;
  return 'internal_error';
}

/** For logs: an error's class name (never its message, which could quote an answer). */
export const errorName = (error: unknown): string =>
  error instanceof Error ? error.name : typeof error;
/** For logs: the class name of the error an adapter wrapped, if any. */
export const causeName = (error: unknown): string | undefined =>
  error instanceof Error && error.cause instanceof Error ? error.cause.name : undefined;

/** Skipped as done; a forced run says why (a retry of its request). */
export function skippedAsDone(
  logger: CoreLogger,
  id: string,
  forceId: string | undefined,
): IdOutcome {
  if (forceId !== undefined) {
    logger.info('keys already reissued for this forced request (a retry of it); skipped', {
      businessApplicationId: id,
      forceId,
    });
  }
  return { kind: 'skipped' };
}
