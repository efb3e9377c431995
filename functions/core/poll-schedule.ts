/**
 * When a caller polls the table while another instance mints (the lease
 * waiters of token-service.ts). Shaped by how long a mint takes: the minter
 * stores its mint's duration with the token (`mint_ms`, a duration on its own
 * clock, so no two clocks are compared), and a waiter expects the new token
 * about that long after the lease was taken.
 *
 * - The first poll comes one expected mint (at most 1 s) after the waiter
 *   learned of the lease. In a stampede the holder took it moments before, and its token
 *   lands one mint and one write later: polling sooner only adds reads, which
 *   on a loaded table delay everyone, the holder's write included.
 * - Then short polls, every third of a mint (at least 10 ms, and no sooner than
 *   twice the last read took), until two mints' time has passed: the token is
 *   found within one short interval of its store.
 * - Then a back-off, doubling up to `maxDelayMs`, for a mint that is slow,
 *   retrying, or whose holder died (the lease runs out and a waiter takes over).
 *
 * Every delay is jittered by ±25 %, so waiters spread their reads, except the
 * first, which is only ever later (by up to 25 %): earlier than one mint, the
 * token is seldom there. The number of reads is bounded whatever happens:
 * `maxPolls(waitMs)`.
 */
export interface PollScheduleOptions {
  /** How long a mint is expected to take, milliseconds. */
  readonly expectedMintMs: number;
  /** The longest delay between two polls in the back-off. */
  readonly maxDelayMs: number;
  /** 0 <= random() < 1. */
  readonly random: () => number;
}

/** Below this a fast poll only adds reads: a GetItem takes a few milliseconds itself. */
export const MIN_POLL_STEP_MS = 10;
/**
 * Expected mint durations are clamped to this range: a stored value may be
 * odd, and one mint slowed by provider retries must not hold the next burst's
 * waiters back for seconds (the back-off covers slow mints anyway).
 */
export const EXPECTED_MINT_RANGE_MS = { min: 20, max: 2000 } as const;

/** `ms` jittered by ±25 % (`random` in [0, 1)), at least 1 ms: how every waiter's delay spreads. */
export const jittered = (ms: number, random: () => number): number =>
  Math.max(1, Math.round(ms * (0.75 + 0.5 * random())));

/**
 * The first poll comes no later than this: the expected mint is one past
 * mint's duration, and one slowed by provider retries must not keep every
 * waiter of a fast mint waiting seconds.
 */
const FIRST_POLL_MAX_MS = 1000;
/** The least delay after a poll, in multiples of how long that poll took. */
const READS_PACE = 2;
const STEPS_PER_MINT = 3;
const FAST_PHASE_MINTS = 2;

export class PollSchedule {
  readonly #expected: number;
  readonly #step: number;
  readonly #maxDelay: number;
  readonly #random: () => number;
  /** Nominal (unjittered) time since the wait began, where the next delay ends. */
  #elapsed = 0;
  #polled = false;
  #backoff: number | undefined;
  #lastReadMs = 0;

  constructor(options: PollScheduleOptions) {
    this.#expected = Math.min(
      EXPECTED_MINT_RANGE_MS.max,
      Math.max(EXPECTED_MINT_RANGE_MS.min, options.expectedMintMs),
    );
    this.#step = Math.max(MIN_POLL_STEP_MS, this.#expected / STEPS_PER_MINT);
    this.#maxDelay = Math.max(this.#step, options.maxDelayMs);
    this.#random = options.random;
  }

  /** The delay before the next poll, milliseconds. */
  next(): number {
    if (!this.#polled) {
      this.#polled = true;
      const first = Math.min(this.#expected, FIRST_POLL_MAX_MS);
      this.#elapsed = first;
      return Math.round(first * (1 + 0.25 * this.#random()));
    }
    const nominal = this.#nominal();
    this.#elapsed += nominal;
    const paced = Math.max(nominal, READS_PACE * this.#lastReadMs);
    return jittered(paced, this.#random);
  }

  /**
   * How long the last poll took to answer. A waiter spends at most a third of
   * its time in reads: when many waiters load the table and reads slow down,
   * each polls less often, so the total rate settles at what the table serves
   * and the minter's own write is not queued behind them.
   */
  answeredIn(ms: number): void {
    this.#lastReadMs = Math.max(0, ms);
  }

  /** A poll that was refused (throttled): the next ones come at least twice as far apart. */
  slowDown(): void {
    this.#backoff = Math.min(this.#maxDelay, 2 * (this.#backoff ?? this.#step));
    this.#elapsed = Math.max(this.#elapsed, FAST_PHASE_MINTS * this.#expected);
  }

  #nominal(): number {
    if (this.#elapsed < FAST_PHASE_MINTS * this.#expected) return this.#step;
    this.#backoff = Math.min(this.#maxDelay, 2 * (this.#backoff ?? this.#step));
    return this.#backoff;
  }
}

/**
 * The most polls a waiter makes in `waitMs` (jitter at its shortest): the
 * ceiling on DynamoDB reads per waiter.
 */
export function maxPolls(options: Omit<PollScheduleOptions, 'random'>, waitMs: number): number {
  const schedule = new PollSchedule({ ...options, random: () => 0 });
  let polls = 0;
  for (let at = schedule.next(); at < waitMs; at += schedule.next()) polls++;
  // The waiter cuts its last sleep to the deadline and reads once more there.
  return polls + 1;
}
