import { describe } from './describe-error.js';
import type { TokenStore } from './ports.js';
import type { CoreLogger } from './token-service-types.js';

/** Default: an instance marks a scope in use at most every 3 minutes. */
export const USE_MARK_INTERVAL_SECONDS = 180;

/**
 * Marks scopes in use in the table (`last_used_at`) at most once per
 * interval per instance, so tracking use costs no write per vend; the
 * scheduled refresh keeps in-use scopes fresh (refresh/in-use.ts).
 */
export class UseMarks {
  readonly #store: Pick<TokenStore, 'markUsed'>;
  readonly #logger: CoreLogger;
  readonly #interval: number;
  /** Per item key: when this instance last marked it (epoch seconds). */
  readonly #marked = new Map<string, number>();

  constructor(
    store: Pick<TokenStore, 'markUsed'>,
    logger: CoreLogger,
    intervalSeconds = USE_MARK_INTERVAL_SECONDS,
  ) {
    this.#store = store;
    this.#logger = logger;
    this.#interval = intervalSeconds;
  }

  /** Marks `key` used at `now` unless this instance did within the interval; a failure only loses one mark. */
  async note(key: string, now: number): Promise<void> {
    const last = this.#marked.get(key);
    if (last !== undefined && now - last < this.#interval) return;
    this.#marked.set(key, now);
    try {
      await this.#store.markUsed(key, now);
    } catch (error) {
      this.#logger.warn('could not mark the scope in use', { key, error: describe(error) });
    }
  }
}
