/** Time source injected everywhere the core needs "now" or a pause. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Waits `ms` milliseconds (a fake clock advances itself instead). */
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/** Whole epoch seconds of a clock, rounded down. */
export const epochSeconds = (clock: Clock): number => Math.floor(clock.now() / 1000);
