import type { Context } from 'aws-lambda';
import { systemClock } from '../core/clock.js';
import { createAwsRuntime } from '../vend-token/aws-runtime.js';
import { runScheduledRefresh, ScheduledRefreshFailedError } from './scheduled-refresh.js';

// Thin wiring, shared with the vend function: the same table, key, secret and
// lease, so the schedule and every vend instance mint at most once together.
const { runtime, store, settings, logger, metrics, extra } = createAwsRuntime(
  process.env,
  'refresh',
  (reader) => ({
    inUseWindowSeconds: reader.integer('IN_USE_WINDOW_SECONDS', 3600, 300, 86_400),
    intervalSeconds: reader.integer('REFRESH_INTERVAL_SECONDS', 300, 60, 3600),
  }),
);

/** EventBridge Scheduler target: the event's content is not used. */
export const handler = async (_event: unknown, context: Context) => {
  logger.addContext(context);
  try {
    const report = await runScheduledRefresh(
      { tokens: runtime.tokens, store, clock: systemClock, logger },
      {
        inUseWindowSeconds: extra.inUseWindowSeconds,
        dueWithinSeconds: 2 * extra.intervalSeconds,
        scopes: settings.policy.scopes,
      },
    );
    logger.info('scheduled refresh', { ...report });
    metrics.addMetric('ScheduledRefreshes', 'Count', report.refreshed.length);
    metrics.addMetric('ScheduledRefreshFailures', 'Count', report.failed.length);
    // Failing the invocation lets Lambda's Errors metric and the schedule's retries see it.
    if (report.failed.length > 0) throw new ScheduledRefreshFailedError(report);
    return report;
  } finally {
    metrics.publishStoredMetrics();
  }
};
