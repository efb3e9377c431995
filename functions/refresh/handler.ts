import type { Context } from 'aws-lambda';
import {
  AdminError,
  asAdminError,
  assertConfiguredScope,
  parseAdminEvent,
} from '../admin/admin-event.js';
import { systemClock } from '../core/clock.js';
import { createAwsRuntime } from '../vend-token/aws-runtime.js';
import { forceRefresh } from './force-refresh.js';
import {
  endRun,
  failedOnProviderAlone,
  refreshFailureCode,
  refreshStartDeadline,
  runScheduledRefresh,
  scheduledRefreshDueWithin,
} from './scheduled-refresh.js';

// Thin wiring, shared with the vend function: the same table, key, secret and
// lease, so the schedule and every vend instance mint at most once together.
const { runtime, store, policy, logger, metrics, extra } = createAwsRuntime(
  process.env,
  'refresh',
  (reader) => ({
    inUseWindowSeconds: reader.integer('IN_USE_WINDOW_SECONDS', 3600, 300, 86_400),
    intervalSeconds: reader.integer('REFRESH_INTERVAL_SECONDS', 300, 60, 3600),
  }),
);

const count = (metric: 'RefreshRunsFailedUpstream') => metrics.addMetric(metric, 'Count', 1);

const isRefreshEvent = (event: unknown): boolean =>
  typeof event === 'object' &&
  event !== null &&
  (event as { action?: unknown }).action === 'refresh';

/**
 * EventBridge Scheduler target (any event without `"action":"refresh"`): the
 * scheduled refresh. `{"action":"refresh","scope":"<scope>|unscoped"}` (sent
 * by the admin function): one forced refresh of that scope.
 */
export const handler = async (event: unknown, context: Context) => {
  logger.addContext(context);
  try {
    if (isRefreshEvent(event)) {
      const parsed = parseAdminEvent(event);
      if (parsed.action !== 'refresh') throw new AdminError('invalid_request', 'not a refresh');
      assertConfiguredScope((await policy.current()).policy.scopes, parsed.scope);
      return await forceRefresh(runtime.tokens, parsed.scope).catch((error: unknown) => {
        const failure = asAdminError(error);
        if (failure instanceof AdminError && failedOnProviderAlone([refreshFailureCode(error)])) {
          count('RefreshRunsFailedUpstream');
        }
        throw failure;
      });
    }
    const report = await runScheduledRefresh(
      { tokens: runtime.tokens, store, clock: systemClock, logger },
      {
        inUseWindowSeconds: extra.inUseWindowSeconds,
        dueWithinSeconds: scheduledRefreshDueWithin(extra.intervalSeconds),
        // The policy now in force: a scope removed from it is never refreshed upstream.
        scopes: (await policy.current()).policy.scopes,
        // Stop starting refreshes while there is time to finish them and report.
        deadlineMs: refreshStartDeadline(systemClock.now(), context.getRemainingTimeInMillis()),
      },
    );
    logger.info('scheduled refresh', { ...report });
    if (report.deferred.length > 0) {
      // Not a failure: those scopes are served, and refreshed ahead by their first caller.
      logger.warn('scheduled refresh left scopes to the vend path', {
        deferred: report.deferred.length,
        first: report.deferred.slice(0, 20),
      });
    }
    metrics.addMetric('ScheduledRefreshes', 'Count', report.refreshed.length);
    metrics.addMetric('ScheduledRefreshFailures', 'Count', report.failed.length);
    metrics.addMetric('ScheduledRefreshDeferred', 'Count', report.deferred.length);
    return endRun(report, count);
  } finally {
    metrics.publishStoredMetrics();
  }
};
