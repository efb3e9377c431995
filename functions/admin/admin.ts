import type { Clock } from '../core/clock.js';
import { StoreUnavailableError } from '../core/errors.js';
import { scopeLabel, tokenKey } from '../core/item-keys.js';
import type { PolicyProvider } from '../core/policy-source.js';
import type { TokenStore } from '../core/ports.js';
import type { CoreLogger } from '../core/token-service-types.js';
import type { ClearPendingKeyResult } from '../issue-keys/clear-pending-key.js';
import { type KeyIssuingResult, KeyJobStoreError } from '../issue-keys/errors.js';
import type { ClearPendingKeyRequest } from '../issue-keys/event.js';
import type { KeyJobSummaries } from '../issue-keys/ports.js';
import {
  AdminError,
  asAdminError,
  assertConfiguredScope,
  InvokedFunctionError,
  parseAdminEvent,
} from './admin-event.js';
import { keyJobStatus, policyStatus, type StatusReport, tokenStatus } from './status.js';

/** What a forced refresh of one scope answers. */
export interface RefreshOutcome {
  readonly scope: string;
  readonly status: 'refreshed' | 'busy';
  readonly expires_at?: number;
}

export interface AdminDeps {
  readonly store: Pick<TokenStore, 'list' | 'delete'>;
  /** Key-job records, their non-secret part only (in AWS the key-jobs index). */
  readonly jobs: KeyJobSummaries;
  /**
   * Forces a refresh of one scope under the vend path's lease. In AWS the
   * refresh function does it (only it and vend read the credentials secret);
   * locally a token service in this process.
   */
  readonly refresh: (scope: string | undefined) => Promise<RefreshOutcome>;
  /** Runs the key-issuing job with the event (the issue-keys function in AWS). */
  readonly issueKeys: (event: Record<string, unknown>) => Promise<KeyIssuingResult>;
  /**
   * The access policy in force: its scopes are the only ones refreshed (no
   * other is sent upstream), and `status` shows its version.
   */
  readonly policy: PolicyProvider;
  /**
   * Drops a key job's pending Idempotency-Key: the issue-keys function in AWS, which
   * alone may write `KEYS#` items (the admin role may not).
   */
  readonly clearPendingKey: (request: ClearPendingKeyRequest) => Promise<ClearPendingKeyResult>;
  readonly inUseWindowSeconds: number;
  readonly clock: Clock;
  readonly logger: CoreLogger;
  /**
   * Counts the failed actions the admin-errors alarm subtracts:
   * `InvalidEvents`, an event refused as `invalid_request` (a mistyped console
   * event: an operator's typo does not page on-call), and
   * `InvokedFunctionFailures`, an action the invoked refresh or issue-keys
   * function failed (its own alarms judge it: one fault, one page).
   */
  readonly count?: (metric: AdminMetric) => void;
}

/** What the admin counts (Powertools Metrics, service `admin`). */
export type AdminMetric = 'InvalidEvents' | 'InvokedFunctionFailures';

/** Scopes whose cached token was removed, and those that had none to remove. */
export interface InvalidateReport {
  readonly invalidated: string[];
  readonly not_cached: string[];
  readonly note: string;
}

export type AdminResult =
  | StatusReport
  | InvalidateReport
  | RefreshOutcome
  | KeyIssuingResult
  | ClearPendingKeyResult;

/** What the admin knows of its own invocation. */
export interface AdminInvocation {
  /**
   * The Lambda request id: a forced `issue-keys` event without a `forceId` is sent
   * with this one, so Lambda's retries of this invocation (same request id) never
   * reissue an id twice (functions/issue-keys/job.ts, FORCED REQUESTS).
   */
  readonly requestId?: string;
}

/**
 * The key jobs for `status`. Their listing failing is the admin's table
 * failing, as the token listing failing is: one code, `store_unavailable`,
 * whichever of the two listings DynamoDB fails first (docs/operations.md).
 */
async function listKeyJobs(jobs: KeyJobSummaries) {
  try {
    return await jobs.list();
  } catch (error) {
    if (error instanceof KeyJobStoreError) {
      throw new StoreUnavailableError(error.message, { cause: error });
    }
    throw error;
  }
}

/** A forced issue-keys event carries a forceId: its own, else the admin's request id. */
function withForceId(
  event: Record<string, unknown>,
  requestId: string | undefined,
): Record<string, unknown> {
  return event.force === true && event.forceId === undefined && requestId !== undefined
    ? { ...event, forceId: requestId }
    : event;
}

/**
 * The admin function's core (docs/operations.md): `status`, `invalidate`,
 * `refresh`, `issue-keys` and `clear-pending-key`. Never returns or logs a token or key.
 * @throws AdminError with a machine-readable `code` (the message starts with it)
 */
export function createAdmin(
  deps: AdminDeps,
): (event: unknown, invocation?: AdminInvocation) => Promise<AdminResult> {
  const dispatch = async (raw: unknown, invocation: AdminInvocation): Promise<AdminResult> => {
    const event = parseAdminEvent(raw);
    deps.logger.info('admin', {
      action: event.action,
      // An operator's reason is part of the audit trail.
      ...(event.action === 'clear-pending-key' ? event.request : {}),
    });
    try {
      switch (event.action) {
        case 'status': {
          const nowMs = deps.clock.now();
          const [items, jobs, loaded] = await Promise.all([
            deps.store.list(),
            listKeyJobs(deps.jobs),
            deps.policy.current(),
          ]);
          return {
            now: Math.floor(nowMs / 1000),
            policy: policyStatus(loaded),
            tokens: items
              .map((item) => tokenStatus(item, nowMs, deps.inUseWindowSeconds))
              .sort((a, b) => a.scope.localeCompare(b.scope)),
            key_jobs: jobs
              .map((job) => keyJobStatus(job, nowMs))
              .sort((a, b) => a.business_application_id.localeCompare(b.business_application_id)),
          };
        }
        case 'invalidate': {
          const keys = event.all
            ? (await deps.store.list()).map((item) => item.pk)
            : [tokenKey(event.scope)];
          const invalidated: string[] = [];
          const notCached: string[] = [];
          for (const key of keys) {
            ((await deps.store.delete(key)) ? invalidated : notCached).push(scopeLabel(key));
          }
          return {
            invalidated,
            not_cached: notCached,
            note: 'Instances drop their in-memory copy within 60 s; the next vend mints anew.',
          };
        }
        case 'refresh':
          assertConfiguredScope((await deps.policy.current()).policy.scopes, event.scope);
          return await deps.refresh(event.scope);
        case 'issue-keys':
          return await deps.issueKeys(withForceId(event.event, invocation.requestId));
        case 'clear-pending-key':
          return await deps.clearPendingKey(event.request);
      }
    } catch (error) {
      throw asAdminError(error);
    }
  };
  return async (raw, invocation = {}) => {
    try {
      return await dispatch(raw, invocation);
    } catch (error) {
      if (error instanceof InvokedFunctionError) {
        deps.count?.('InvokedFunctionFailures');
      } else if (error instanceof AdminError && error.code === 'invalid_request') {
        deps.count?.('InvalidEvents');
      }
      throw error;
    }
  };
}
