import type { ClientClock, Token } from './types.js';

interface Flight {
  /** The min_ttl the request was sent with: joiners asking for no more can share it. */
  readonly minTtl: number;
  readonly promise: Promise<Token>;
}

/**
 * Per-scope token cache with single flight, in the memory of one process.
 *
 * A cached token is served only while it has more than `minTtl` seconds left
 * (by this process's clock). Concurrent misses for one scope share one load;
 * a caller asking for a longer `minTtl` than the load in flight starts its own.
 * Failed loads are not cached.
 */
export class TokenCache {
  readonly #clock: ClientClock;
  readonly #tokens = new Map<string, Token>();
  readonly #flights = new Map<string, Flight>();

  constructor(clock: ClientClock) {
    this.#clock = clock;
  }

  get(key: string, minTtl: number, load: () => Promise<Token>): Promise<Token> {
    const cached = this.#tokens.get(key);
    if (cached && cached.expiresAt - this.#clock.now() / 1000 > minTtl) {
      return Promise.resolve(cached);
    }
    const flight = this.#flights.get(key);
    if (flight && flight.minTtl >= minTtl) return flight.promise;

    const promise = load().then((token) => {
      const current = this.#tokens.get(key);
      if (!current || current.expiresAt <= token.expiresAt) this.#tokens.set(key, token);
      return token;
    });
    const settled = () => {
      if (this.#flights.get(key)?.promise === promise) this.#flights.delete(key);
    };
    promise.then(settled, settled);
    this.#flights.set(key, { minTtl, promise });
    return promise;
  }

  /**
   * Forgets one cached token, or all of them, and returns what was forgotten
   * by key. Loads in flight are unaffected.
   */
  delete(key?: string): Map<string, Token> {
    const dropped = new Map<string, Token>();
    for (const [k, token] of this.#tokens) {
      if (key === undefined || k === key) dropped.set(k, token);
    }
    for (const k of dropped.keys()) this.#tokens.delete(k);
    return dropped;
  }
}
