/** Small statistics helpers for the bench: percentiles of latency samples. */

/** The p-th percentile (0..100) of `samples` by nearest rank; NaN when there are none. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] as number;
}

export const median = (samples: readonly number[]): number => percentile(samples, 50);

export interface Summary {
  readonly n: number;
  readonly p50: number;
  readonly p99: number;
}

export function summarize(samples: readonly number[]): Summary {
  return { n: samples.length, p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

/** A seeded PRNG (mulberry32), so a bench run's traffic is the same every time. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
