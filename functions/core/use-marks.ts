import { describe } from './describe-error.js';
import type { StoredItem, TokenStore } from './ports.js';
import type { CoreLogger } from './token-service-types.js';

/** Default: an instance marks a scope in use at most every 3 minutes. */
export const USE_MARK_INTERVAL_SECONDS = 180;

/**
 * Marks scopes in use in the table (`last_used_at`) at most once per
 * interval, so tracking use costs no write per vend; the scheduled refresh
 * keeps in-use scopes fresh (refresh/in-use.ts). A mark another instance made
 * counts as this instance's own once read, so sparse traffic spread over many
 * instances does not add a write to nearly every vend.
 */
export class UseMarks {
  readonly #store: Pick<TokenStore, 'markUsed'>;
  readonly #logger: CoreLogger;
  readonly #interval: number;
  /** Per item key: the latest mark this instance made or read (epoch seconds). */
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

  /**
   * Takes note of the mark on an item just read. Only a mark at least as new
   * as the item's token counts: it says "vended since this token was minted",
   * which the refresh relies on (in-use.ts).
   */
  seen(key: string, item: StoredItem | undefined): void {
    const at = item?.lastUsedAt;
    if (at === undefined || (item?.token !== undefined && at < item.token.issuedAt)) return;
    if (at > (this.#marked.get(key) ?? Number.NEGATIVE_INFINITY)) this.#marked.set(key, at);
  }

  /** Marks `key` used at `now` unless a mark made or read here is within the interval; a failure only loses one mark. */
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
