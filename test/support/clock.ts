import type { Clock } from '../../functions/core/clock.js';

/**
 * A controllable clock. `advance` moves time forward at once. With
 * `virtualSleep`, `sleep` advances the clock instead of waiting, so lease
 * timeouts and backoff pass without real waiting.
 */
export class TestClock implements Clock {
  #offsetMs = 0;
  readonly #virtualSleep: boolean;
  readonly #frozenAt: number | undefined;

  /**
   * `frozenAt` (epoch ms): time stands still but for `advance` and virtual
   * sleeps, so assertions on whole seconds never straddle a real second.
   */
  constructor(options: { virtualSleep?: boolean; frozenAt?: number } = {}) {
    this.#virtualSleep = options.virtualSleep ?? false;
    this.#frozenAt = options.frozenAt;
  }

  now(): number {
    return (this.#frozenAt ?? Date.now()) + this.#offsetMs;
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

/**
 * Runs `after` each time `clock` has slept (with the number of sleeps so
 * far): what another instance does between a waiter's polls.
 */
export function afterEverySleep(clock: TestClock, after: (sleeps: number) => Promise<void>): void {
  const sleep = clock.sleep.bind(clock);
  let sleeps = 0;
  clock.sleep = async (ms: number) => {
    await sleep(ms);
    await after(++sleeps);
  };
}
