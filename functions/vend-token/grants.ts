import type { LambdaFunctionURLEvent, LambdaFunctionURLResult } from 'aws-lambda';
import {
  InternalError,
  InvalidRequestError,
  UnauthenticatedError,
  VendError,
} from '../core/errors.js';
import type { PolicyProvider } from '../core/policy-source.js';
import { jsonResponse, problemResponse } from '../core/problem.js';
import type { CoreLogger } from '../core/token-service.js';

/** What `GET /grants` answers: the caller as the function sees it, and its grants. */
export interface GrantsAnswer {
  readonly principal: string;
  /** The scopes the caller may have, sorted. */
  readonly scopes: string[];
  /** Whether the caller may have the unscoped (partner) token. */
  readonly unscoped: boolean;
  /** The access policy version it was judged by. */
  readonly policy_version: string;
}

/** The caller's ARN as the Function URL's IAM authorizer filled it in, if any. */
export function callerOf(event: LambdaFunctionURLEvent): unknown {
  return (event.requestContext as { authorizer?: { iam?: { userArn?: unknown } } })?.authorizer?.iam
    ?.userArn;
}

/**
 * `GET /grants`: "what am I allowed?" The calling principal and the scopes
 * (and unscoped token) the access policy in force grants it. Never a token,
 * never another principal's grants, and no call to the provider.
 */
export async function answerGrants(
  event: LambdaFunctionURLEvent,
  deps: { readonly policy: PolicyProvider; readonly logger: CoreLogger },
): Promise<LambdaFunctionURLResult> {
  const principal = callerOf(event);
  try {
    if ((event.rawQueryString ?? '') !== '') {
      throw new InvalidRequestError('GET /grants takes no query parameters.');
    }
    if (typeof principal !== 'string' || principal === '') throw new UnauthenticatedError();
    const loaded = await deps.policy.current();
    const { scopes, unscoped } = loaded.policy.grantsOf(principal);
    deps.logger.info('grants', { principal, status: 200, scopes: scopes.length, unscoped });
    const answer: GrantsAnswer = { principal, scopes, unscoped, policy_version: loaded.version };
    return jsonResponse(200, answer);
  } catch (caught) {
    const error = caught instanceof VendError ? caught : new InternalError({ cause: caught });
    const line = { principal: principal ?? null, status: error.status, code: error.code };
    if (error instanceof InternalError) deps.logger.error('grants', { ...line, error: caught });
    else deps.logger.info('grants', line);
    return problemResponse(error);
  }
}
