import { describe, expect, it } from 'vitest';
import { maxPolls, PollSchedule } from '../../functions/core/poll-schedule.js';

const delays = (schedule: PollSchedule, n: number): number[] =>
  Array.from({ length: n }, () => schedule.next());

describe('the poll schedule of a lease waiter', () => {
  it('polls first one expected mint after the lease was found, then every third of a mint until two mints have passed, then backs off to the cap', () => {
    const schedule = new PollSchedule({ expectedMintMs: 100, maxDelayMs: 800, random: () => 0.5 });

    expect(delays(schedule, 12)).toEqual([113, 33, 33, 33, 67, 133, 267, 533, 800, 800, 800, 800]);
  });

  it('jitters the first poll only later, by up to a quarter, and every other delay by a quarter either way', () => {
    const low = new PollSchedule({ expectedMintMs: 1000, maxDelayMs: 800, random: () => 0 });
    const high = new PollSchedule({ expectedMintMs: 1000, maxDelayMs: 800, random: () => 0.9999 });

    expect(delays(low, 2)).toEqual([1000, 250]);
    expect(delays(high, 2)).toEqual([1250, 417]);
  });

  it('never polls faster than every 10 ms, clamps an odd expected duration, and polls first within 1 s however slow the last mint was', () => {
    const fast = new PollSchedule({ expectedMintMs: 1, maxDelayMs: 800, random: () => 0.5 });
    const huge = new PollSchedule({ expectedMintMs: 1e9, maxDelayMs: 800, random: () => 0.5 });

    expect(delays(fast, 3)).toEqual([23, 10, 10]); // the first: 20 ms, the least expected mint
    expect(huge.next()).toBe(1125); // 1 s, jittered
  });

  it('waits at least twice as long as the last read took: slow reads (a loaded table) mean fewer polls', () => {
    const schedule = new PollSchedule({ expectedMintMs: 100, maxDelayMs: 800, random: () => 0.5 });
    schedule.next();

    schedule.answeredIn(45);

    expect(schedule.next()).toBe(90);
  });

  it('after a throttled poll, skips the short polls and backs off', () => {
    const schedule = new PollSchedule({ expectedMintMs: 100, maxDelayMs: 800, random: () => 0.5 });
    schedule.next();

    schedule.slowDown();

    expect(delays(schedule, 3)).toEqual([133, 267, 533]);
  });

  it('bounds the reads of one waiter in its 13 s: 29 for the default expectation, 31 whatever the mint takes', () => {
    expect(maxPolls({ expectedMintMs: 100, maxDelayMs: 800 }, 13_000)).toBe(29);
    const worst = Math.max(
      ...Array.from({ length: 3000 }, (_, i) =>
        maxPolls({ expectedMintMs: 2 * i + 1, maxDelayMs: 800 }, 13_000),
      ),
    );
    expect(worst).toBe(31);
  });
});
