import type { Clock } from '../../functions/core/clock.js';

/**
 * A controllable clock. `advance` moves time forward at once. With
 * `virtualSleep`, `sleep` advances the clock instead of waiting, so lease
 * timeouts and backoff pass without real waiting.
 */
export class TestClock implements Clock {
  #offsetMs = 0;
  readonly #virtualSleep: boolean;

  constructor(options: { virtualSleep?: boolean } = {}) {
    this.#virtualSleep = options.virtualSleep ?? false;
  }

  now(): number {
    return Date.now() + this.#offsetMs;
  }

  async sleep(ms: number): Promise<void> {
    if (this.#virtualSleep) {
      this.#offsetMs += Math.max(0, ms);
      await new Promise((resolve) => setImmediate(resolve));
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, ms));
  }

  advance(seconds: number): void {
    this.#offsetMs += seconds * 1000;
  }
}
