import type { LambdaFunctionURLEvent, LambdaFunctionURLResult } from 'aws-lambda';
import type { Clock } from '../core/clock.js';
import {
  InternalError,
  MethodNotAllowedError,
  NotFoundError,
  UnauthenticatedError,
  VendError,
} from '../core/errors.js';
import { fingerprint } from '../core/fingerprint.js';
import type { PolicyProvider } from '../core/policy-source.js';
import { jsonResponse, problemResponse } from '../core/problem.js';
import type { CoreLogger, TokenService, VendOutcome } from '../core/token-service.js';
import { parseVendRequest } from '../core/vend-request.js';
import { answerGrants, callerOf } from './grants.js';

export interface VendAppDeps {
  readonly tokens: Pick<TokenService, 'getToken'>;
  /** The access policy in force (fetched at most every POLICY_MAX_AGE_SECONDS). */
  readonly policy: PolicyProvider;
  readonly logger: CoreLogger;
  readonly clock: Clock;
  /** Records one vend for metrics: the outcome label and latency. */
  readonly recordVend?: (outcome: string, latencyMs: number) => void;
}

export type VendApp = (event: LambdaFunctionURLEvent) => Promise<LambdaFunctionURLResult>;

/** One low-cardinality label per vend for the dashboard. */
export function outcomeLabel(outcome: VendOutcome): string {
  if (outcome.degraded) return 'degraded';
  if (outcome.waited) return 'waited';
  if (outcome.refreshed) return 'refreshed';
  return outcome.tier;
}

/**
 * The vend Function URL: routes (`/token`, `/grants`, `/healthz`), validates
 * input before grants, checks the access policy, gets the token, and answers
 * JSON or problem+json. Writes one audit line per vend; never a token, only
 * its fingerprint.
 */
export function createVendApp(deps: VendAppDeps): VendApp {
  const { logger, clock } = deps;

  return async (event) => {
    const method = event.requestContext?.http?.method ?? 'GET';
    const path = event.rawPath ?? '/';
    if (path === '/healthz') {
      return method === 'GET'
        ? jsonResponse(200, { status: 'ok' })
        : problemResponse(new MethodNotAllowedError('GET'));
    }
    if (path === '/grants') {
      return method === 'GET'
        ? answerGrants(event, deps)
        : problemResponse(new MethodNotAllowedError('GET'));
    }
    if (path !== '/token') return problemResponse(new NotFoundError());
    if (method !== 'GET') return problemResponse(new MethodNotAllowedError('GET'));

    const started = clock.now();
    const principal = callerOf(event);
    let scope: string | undefined;
    let parsed = false;
    try {
      const request = parseVendRequest(event.rawQueryString ?? '');
      scope = request.scope;
      parsed = true;
      if (typeof principal !== 'string' || principal === '') throw new UnauthenticatedError();
      // No valid policy loaded yet: 503 with Retry-After, never a grant.
      (await deps.policy.current()).policy.authorize(principal, scope);
      const { token, outcome } = await deps.tokens.getToken(scope, request.minTtl, request.revoked);
      const now = Math.floor(clock.now() / 1000);
      const expiresIn = Math.max(0, token.expiresAt - now);
      const latencyMs = clock.now() - started;
      logger.info('vend', {
        principal,
        scope: scope ?? 'unscoped',
        status: 200,
        outcome: outcomeLabel(outcome),
        ...outcome,
        ...(request.revoked === undefined ? {} : { revokedFingerprint: request.revoked }),
        secondsLeft: expiresIn,
        latencyMs,
        tokenFingerprint: fingerprint(token.accessToken),
      });
      deps.recordVend?.(outcomeLabel(outcome), latencyMs);
      return jsonResponse(200, {
        access_token: token.accessToken,
        token_type: 'Bearer',
        expires_in: expiresIn,
        expires_at: token.expiresAt,
        ...(token.scope === undefined ? {} : { scope: token.scope }),
      });
    } catch (caught) {
      const error = caught instanceof VendError ? caught : new InternalError({ cause: caught });
      const latencyMs = clock.now() - started;
      const attributes = {
        principal: principal ?? null,
        // A request that did not parse asked for no scope we can name (never echoed).
        scope: parsed ? (scope ?? 'unscoped') : null,
        status: error.status,
        outcome: 'error',
        code: error.code,
        latencyMs,
      };
      if (error instanceof InternalError) logger.error('vend', { ...attributes, error: caught });
      else logger.info('vend', attributes);
      deps.recordVend?.(`error:${error.code}`, latencyMs);
      return problemResponse(error);
    }
  };
}
