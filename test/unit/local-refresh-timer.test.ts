/**
 * The local stack's refresh timer, with timers that fire on demand: it runs
 * the scheduled refresh every interval, logs each report, survives a failed
 * run, never keeps the process alive and stops cleanly.
 */
import { describe, expect, it, vi } from 'vitest';
import type { CoreLogger } from '../../functions/core/token-service-types.js';
import type { ScheduledRefreshReport } from '../../functions/refresh/scheduled-refresh.js';
import { startRefreshTimer, systemTimers } from '../../local/refresh-timer.js';
import { fakeTimers } from '../support/fake-timers.js';

const report = (patch: Partial<ScheduledRefreshReport> = {}): ScheduledRefreshReport => ({
  refreshed: [],
  fresh: [],
  busy: [],
  unused: [],
  unconfigured: [],
  failed: [],
  deferred: [],
  ...patch,
});

const logger = () => ({ info: vi.fn(), warn: vi.fn(), error: vi.fn() });

describe('startRefreshTimer', () => {
  it('runs every interval and logs each report', async () => {
    const fake = fakeTimers();
    const log = logger();
    const run = vi.fn(async () => report({ refreshed: ['ba_1'], unused: ['ba_2'] }));

    const timer = startRefreshTimer(
      { run, logger: log as unknown as CoreLogger, timers: fake.timers },
      300,
    );

    expect(run).not.toHaveBeenCalled();
    expect(fake.pending.map((p) => p.ms)).toEqual([300_000]);
    await fake.fire();
    await fake.fire();
    expect(run).toHaveBeenCalledTimes(2);
    expect(log.info).toHaveBeenCalledWith(
      'scheduled refresh',
      expect.objectContaining({ refreshed: ['ba_1'], unused: ['ba_2'] }),
    );
    expect(fake.pending.map((p) => p.ms)).toEqual([300_000]);
    await timer.stop();
  });

  it('logs a report with failures as a warning', async () => {
    const fake = fakeTimers();
    const log = logger();
    const failed = [{ scope: 'ba_1', code: 'upstream_unavailable' }];

    startRefreshTimer(
      {
        run: async () => report({ failed }),
        logger: log as unknown as CoreLogger,
        timers: fake.timers,
      },
      60,
    );
    await fake.fire();

    expect(log.warn).toHaveBeenCalledWith('scheduled refresh', expect.objectContaining({ failed }));
  });

  it('logs a run that throws, by error name only, and keeps the schedule', async () => {
    const fake = fakeTimers();
    const log = logger();
    const run = vi
      .fn<() => Promise<ScheduledRefreshReport>>()
      .mockRejectedValueOnce(new Error('connect ECONNREFUSED secret-looking detail'))
      .mockResolvedValue(report());

    startRefreshTimer({ run, logger: log as unknown as CoreLogger, timers: fake.timers }, 60);
    await fake.fire();

    expect(log.error).toHaveBeenCalledWith('scheduled refresh run failed', {
      error: { name: 'Error' },
    });
    expect(JSON.stringify(log.error.mock.calls)).not.toContain('secret-looking');
    await fake.fire();
    expect(run).toHaveBeenCalledTimes(2);
    expect(log.info).toHaveBeenCalledWith('scheduled refresh', expect.any(Object));
  });

  it('on stop clears the timer, waits for a run in progress and schedules nothing more', async () => {
    const fake = fakeTimers();
    let finish: (value: ScheduledRefreshReport) => void = () => undefined;
    const run = vi.fn(
      () =>
        new Promise<ScheduledRefreshReport>((resolve) => {
          finish = resolve;
        }),
    );
    const timer = startRefreshTimer(
      { run, logger: logger() as unknown as CoreLogger, timers: fake.timers },
      60,
    );
    const firing = fake.fire();
    let stopped = false;

    const stopping = timer.stop().then(() => {
      stopped = true;
    });
    await Promise.resolve();
    expect(stopped).toBe(false);
    finish(report());
    await Promise.all([firing, stopping]);

    expect(stopped).toBe(true);
    expect(fake.pending).toEqual([]);
    expect(run).toHaveBeenCalledTimes(1);
  });

  it('clears the pending timer on stop', async () => {
    const fake = fakeTimers();
    const timer = startRefreshTimer(
      { run: async () => report(), logger: logger() as unknown as CoreLogger, timers: fake.timers },
      60,
    );
    const [handle] = fake.pending;

    await timer.stop();

    expect(fake.cleared).toEqual([handle]);
    expect(fake.pending).toEqual([]);
  });

  it('uses real timers that never keep the process alive', () => {
    const handle = systemTimers.setTimeout(async () => undefined, 3_600_000) as NodeJS.Timeout;
    try {
      expect(handle.hasRef()).toBe(false);
    } finally {
      systemTimers.clearTimeout(handle);
    }
  });
});
