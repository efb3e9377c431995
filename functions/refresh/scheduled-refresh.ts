import type { Clock } from '../core/clock.js';
import { describe } from '../core/describe-error.js';
import { CredentialsUnreadableError, UpstreamUnavailableError } from '../core/errors.js';
import { scopeName as label, scopeOfKey } from '../core/item-keys.js';
import type { TokenStore } from '../core/ports.js';
import { failureCode } from '../core/refresh-failure.js';
import type { CoreLogger, TokenService } from '../core/token-service.js';
import { isInUse } from './in-use.js';

export interface ScheduledRefreshConfig {
  /** A scope vended within this many seconds is in use (see in-use.ts). Default 3600. */
  readonly inUseWindowSeconds: number;
  /**
   * Refresh a token that would enter its refresh-ahead window within this
   * many seconds: see scheduledRefreshDueWithin.
   */
  readonly dueWithinSeconds: number;
  /** The access policy's scopes: no other scope is ever sent upstream. */
  readonly scopes: ReadonlySet<string>;
  /** Scopes refreshed at once. Default 4. */
  readonly concurrency?: number;
  /**
   * Epoch ms (on the deps' clock) after which no further refresh starts: the
   * rest is reported `deferred`. The handler sets it from the invocation's
   * remaining time (refreshStartDeadline), so a run ends before Lambda's
   * timeout would cut it off unreported. Default: none.
   */
  readonly deadlineMs?: number;
}

/**
 * The longest one scheduled refresh can take once started: the lease (10 s),
 * within which the provider's attempts, backoff and Retry-After waits end
 * (provider-client.ts), plus DynamoDB and KMS calls (5 s timeouts each) for
 * the read, the lease, the seal and the store, with a margin.
 */
export const LONGEST_REFRESH_MS = 30_000;

/**
 * The latest time an invocation with `remainingMs` left may start a scope's
 * refresh: the longest one refresh takes is kept back, so the last one
 * started ends, and the run reports, before the function's timeout. A short
 * invocation still gets half its time.
 */
export function refreshStartDeadline(nowMs: number, remainingMs: number): number {
  return nowMs + Math.max(remainingMs - LONGEST_REFRESH_MS, remainingMs / 2);
}

/** How late a scheduled run may start and still refresh before any vend sees the window. */
export const RUN_LATENESS_SECONDS = 60;

/**
 * The `dueWithinSeconds` for a schedule running every `intervalSeconds`: a
 * token is refreshed at the last run before it would enter its refresh-ahead
 * window (one interval, plus a minute for a run that starts late), so a
 * scope is minted about once per (lifetime - refresh-ahead), not an interval
 * earlier every time. A run that is missed altogether leaves the token to the
 * vend path's refresh-ahead: one caller mints under the lease, all others
 * keep receiving the current token.
 */
export const scheduledRefreshDueWithin = (intervalSeconds: number): number =>
  intervalSeconds + RUN_LATENESS_SECONDS;

export interface ScheduledRefreshDeps {
  readonly tokens: Pick<TokenService, 'refresh'>;
  readonly store: Pick<TokenStore, 'list'>;
  readonly clock: Clock;
  readonly logger: CoreLogger;
}

/** One run's outcome per cached scope; the unscoped token is listed as `unscoped`. */
export interface ScheduledRefreshReport {
  /** Minted now. */
  readonly refreshed: string[];
  /** In use, and not due before the next run. */
  readonly fresh: string[];
  /** Another caller held the lease or a failed refresh was backing off. */
  readonly busy: string[];
  /** Not vended within the in-use window: left alone. */
  readonly unused: string[];
  /** Cached but no longer in the access policy: never sent upstream. */
  readonly unconfigured: string[];
  readonly failed: Array<{ readonly scope: string; readonly code: string }>;
  /**
   * In use but not tried in this run: its time ran out (`deadlineMs`), or
   * the provider asked to wait (429/503 with Retry-After, or it was
   * unavailable) past it. Left to the vend path's refresh-ahead (one caller
   * mints under the lease, the others keep the current token) and to the
   * next run; the most urgent scopes are tried first, so these are the ones
   * that expire last.
   */
  readonly deferred: string[];
}

/**
 * The provider's failures (provider-client.ts): upstream-errors and
 * credentials-rejected page for them, so a refresh that failed on these
 * alone is counted `RefreshRunsFailedUpstream` and refresh-errors leaves it
 * out (one fault, one page). Any other (the table, KMS, a bug) still pages.
 */
const PROVIDER_CODES: ReadonlySet<string> = new Set([
  'upstream_unavailable',
  'upstream_error',
  'upstream_credentials_rejected',
]);

/**
 * A refresh that could not read the credentials secret: the vend API answers
 * it `upstream_unavailable`, but the provider was never asked (so
 * upstream-errors never counts it), and a run reports it under this code so
 * that refresh-errors pages for it.
 */
export const CREDENTIALS_UNAVAILABLE = 'credentials_unavailable';

/** The code a refresh's failure is reported under: the vend API's, but an unreadable secret's own. */
export function refreshFailureCode(error: unknown): string {
  return error instanceof CredentialsUnreadableError ? CREDENTIALS_UNAVAILABLE : failureCode(error);
}

/** Whether failures with these codes (refreshFailureCode) were the provider's alone (none: no). */
export function failedOnProviderAlone(codes: readonly string[]): boolean {
  return codes.length > 0 && codes.every((code) => PROVIDER_CODES.has(code));
}

/**
 * How a scheduled run ends. When a refresh failed for a reason of ours (the
 * table, KMS, the secret, a bug), a ScheduledRefreshFailedError: Lambda's
 * Errors metric, refresh-errors and the schedule's retry see it. When every
 * failure was the provider's, the report, counted `RefreshRunsFailedUpstream`:
 * upstream-errors and credentials-rejected page for the provider, and a
 * failed invocation would page again through its retry and the failed-runs
 * queue, for a run whose retry is the next scheduled one, minutes later.
 */
export function endRun(
  report: ScheduledRefreshReport,
  count: (metric: 'RefreshRunsFailedUpstream') => void,
): ScheduledRefreshReport {
  if (report.failed.length === 0) return report;
  if (failedOnProviderAlone(report.failed.map((f) => f.code))) {
    count('RefreshRunsFailedUpstream');
    return report;
  }
  throw new ScheduledRefreshFailedError(report);
}

/** A run in which some refresh failed; thrown after every scope was tried. */
export class ScheduledRefreshFailedError extends Error {
  override name = 'ScheduledRefreshFailedError';
  readonly report: ScheduledRefreshReport;
  constructor(report: ScheduledRefreshReport) {
    super(`Refresh failed for ${report.failed.map((f) => `${f.scope} (${f.code})`).join(', ')}.`);
    this.report = report;
  }
}

/**
 * The scheduled refresh (docs/operations.md): every cached token that is in use
 * and would come due before the next run is refreshed under the vend
 * path's own lease (one mint across all instances and the schedule), so once
 * a scope is in use no vend waits on the provider. Returns what it did; the
 * caller decides whether a failure fails the invocation.
 */
export async function runScheduledRefresh(
  deps: ScheduledRefreshDeps,
  config: ScheduledRefreshConfig,
): Promise<ScheduledRefreshReport> {
  const report: ScheduledRefreshReport = {
    refreshed: [],
    fresh: [],
    busy: [],
    unused: [],
    unconfigured: [],
    failed: [],
    deferred: [],
  };
  const now = Math.floor(deps.clock.now() / 1000);
  const inUse: Array<{ scope: string | undefined; expiresAt: number }> = [];
  for (const item of await deps.store.list()) {
    const scope = scopeOfKey(item.pk);
    if (scope === null) continue;
    if (scope !== undefined && !config.scopes.has(scope)) report.unconfigured.push(scope);
    else if (!isInUse(item, now, config.inUseWindowSeconds)) report.unused.push(label(scope));
    else inUse.push({ scope, expiresAt: item.token?.expiresAt ?? 0 });
  }
  // Most urgent first: a run that cannot try every scope leaves those that expire last.
  const due = inUse.sort((a, b) => a.expiresAt - b.expiresAt).map((entry) => entry.scope);
  const deadlineMs = config.deadlineMs ?? Number.POSITIVE_INFINITY;
  /** No lane starts a refresh before this (epoch ms): the provider asked every caller to wait. */
  let holdUntilMs = 0;
  const refreshOne = async (scope: string | undefined): Promise<void> => {
    try {
      const result = await deps.tokens.refresh(scope, {
        dueWithinSeconds: config.dueWithinSeconds,
      });
      report[result.status].push(label(scope));
    } catch (error) {
      const code = refreshFailureCode(error);
      report.failed.push({ scope: label(scope), code });
      // `code` is the report's (an unreadable secret's own, not the vend
      // API's upstream_unavailable that describe gives): the runbook's.
      deps.logger.warn('scheduled refresh failed', {
        scope: label(scope),
        code,
        error: describe(error),
      });
      if (error instanceof UpstreamUnavailableError) {
        // A 429 or 503 is the provider's, not the scope's: its Retry-After (the
        // error's default when it sent none) holds every lane, not only this one.
        holdUntilMs = Math.max(holdUntilMs, deps.clock.now() + error.retryAfter * 1000);
      }
    }
  };
  const lanes = Math.max(1, config.concurrency ?? 4);
  let next = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < due.length) {
        const waitMs = holdUntilMs - deps.clock.now();
        if (waitMs > 0 && holdUntilMs < deadlineMs) await deps.clock.sleep(waitMs);
        const startMs = deps.clock.now();
        if (startMs >= deadlineMs || holdUntilMs >= deadlineMs) break;
        if (startMs < holdUntilMs) continue; // another lane's failure extended the hold
        await refreshOne(due[next++]);
      }
    }),
  );
  for (const scope of due.slice(next)) report.deferred.push(label(scope));
  return report;
}
