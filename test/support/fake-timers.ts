import type { RefreshTimers } from '../../local/refresh-timer.js';

/** Timers that record what is scheduled; `fire` runs the oldest and waits for it. */
export function fakeTimers() {
  const pending: Array<{ fn: () => Promise<void>; ms: number }> = [];
  const cleared: unknown[] = [];
  const timers: RefreshTimers = {
    setTimeout: (fn, ms) => {
      const handle = { fn, ms };
      pending.push(handle);
      return handle;
    },
    clearTimeout: (handle) => {
      cleared.push(handle);
      const at = pending.indexOf(handle as (typeof pending)[number]);
      if (at >= 0) pending.splice(at, 1);
    },
  };
  return {
    timers,
    pending,
    cleared,
    async fire() {
      const next = pending.shift();
      if (!next) throw new Error('nothing scheduled');
      await next.fn();
    },
  };
}
