import type { Token } from './ports.js';

/** Longest an L1 entry is trusted, so an invalidation spreads within a minute. */
export const L1_MAX_AGE_SECONDS = 60;

/** L1: tokens in the memory of one Lambda instance. Times are epoch seconds. */
export class MemoryTokenCache {
  readonly #entries = new Map<string, { token: Token; storedAt: number }>();
  readonly #maxAge: number;

  constructor(maxAgeSeconds = L1_MAX_AGE_SECONDS) {
    this.#maxAge = maxAgeSeconds;
  }

  /** The entry's token while it is younger than the max age and not expired. */
  get(key: string, now: number): Token | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (now - entry.storedAt >= this.#maxAge || now >= entry.token.expiresAt) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry.token;
  }

  set(key: string, token: Token, now: number): void {
    this.#entries.set(key, { token, storedAt: now });
  }

  delete(key: string): void {
    this.#entries.delete(key);
  }

  clear(): void {
    this.#entries.clear();
  }
}

/** A flight's promise, and whether this caller joined one already under way. */
export interface Flight<T> {
  readonly promise: Promise<T>;
  readonly joined: boolean;
}

/** Concurrent calls with one key share one promise (single flight within an instance). */
export class SingleFlight<T> {
  readonly #inFlight = new Map<string, Promise<T>>();

  run(key: string, work: () => Promise<T>): Flight<T> {
    const existing = this.#inFlight.get(key);
    if (existing) return { promise: existing, joined: true };
    const promise = work().finally(() => this.#inFlight.delete(key));
    this.#inFlight.set(key, promise);
    return { promise, joined: false };
  }
}
