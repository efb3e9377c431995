/**
 * The local stack's stand-in for the refresh schedule: runs the scheduled
 * refresh every REFRESH_INTERVAL_SECONDS, one run at a time. A run that fails
 * is logged and the next one still comes; the timer never keeps the process
 * alive and is cleared on stop.
 */
import { describe } from '../functions/core/describe-error.js';
import type { CoreLogger } from '../functions/core/token-service-types.js';
import type { ScheduledRefreshReport } from '../functions/refresh/scheduled-refresh.js';

/** The timer functions used; tests pass fakes that fire on demand. */
export interface RefreshTimers {
  /** Calls `fn` after `ms`; what `fn` returns (the run's promise) is the fake's to use. */
  setTimeout(fn: () => Promise<void>, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemTimers: RefreshTimers = {
  setTimeout: (fn, ms) => {
    const handle = setTimeout(fn, ms);
    handle.unref();
    return handle;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface RefreshTimer {
  /** Clears the timer and waits for a run in progress to end. */
  stop(): Promise<void>;
}

export function startRefreshTimer(
  deps: {
    readonly run: () => Promise<ScheduledRefreshReport>;
    readonly logger: CoreLogger;
    readonly timers?: RefreshTimers;
  },
  intervalSeconds: number,
): RefreshTimer {
  const timers = deps.timers ?? systemTimers;
  let stopped = false;
  let handle: unknown;
  let running: Promise<void> | undefined;

  const tick = async (): Promise<void> => {
    if (stopped) return;
    try {
      const report = await deps.run();
      // Scope names and codes only: a report never holds a token.
      if (report.failed.length > 0) deps.logger.warn('scheduled refresh', { ...report });
      else deps.logger.info('scheduled refresh', { ...report });
    } catch (error) {
      deps.logger.error('scheduled refresh run failed', { error: describe(error) });
    }
    schedule();
  };
  const schedule = (): void => {
    if (stopped) return;
    handle = timers.setTimeout(() => {
      running = tick();
      return running;
    }, intervalSeconds * 1000);
  };
  schedule();

  return {
    async stop() {
      stopped = true;
      timers.clearTimeout(handle);
      await running;
    },
  };
}
