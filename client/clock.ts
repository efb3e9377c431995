import type { ClientClock } from './types.js';

/** Real time. */
export const systemClock: ClientClock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};
