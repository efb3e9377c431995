import { describe } from './describe-error.js';
import type { StoredItem, TokenStore } from './ports.js';
import type { CoreLogger } from './token-service-types.js';

/** Default: an instance marks a scope in use at most every 3 minutes. */
export const USE_MARK_INTERVAL_SECONDS = 180;

/**
 * Marks scopes in use in the table (`last_used_at`), so the scheduled refresh
 * keeps in-use scopes fresh (refresh/in-use.ts). The refresh reads a mark two
 * ways: recent (within its window), or no older than the stored token
 * ("vended since this token was minted", for callers that come back only once
 * per token). So a vend marks when the last mark this instance made or read is
 * older than the interval, or older than the token it serves; otherwise it
 * writes nothing. A mark another instance made counts once read, so sparse
 * traffic spread over many instances does not add a write to nearly every vend.
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

  /** Takes note of the mark on an item just read; a read never moves a mark back. */
  seen(key: string, item: StoredItem | undefined): void {
    const at = item?.lastUsedAt;
    if (at !== undefined && at > (this.#marked.get(key) ?? Number.NEGATIVE_INFINITY)) {
      this.#marked.set(key, at);
    }
  }

  /**
   * Marks `key` used by a vend at `now` of a token issued at `issuedAt`,
   * unless a mark made or read here already covers it. The mark is dated no
   * earlier than `issuedAt`: the vend came after the mint, whatever this
   * instance's clock says. A failure only loses one mark.
   */
  async note(key: string, now: number, issuedAt: number): Promise<void> {
    const last = this.#marked.get(key);
    if (last !== undefined && last >= issuedAt && now - last < this.#interval) return;
    const mark = Math.max(now, issuedAt);
    this.#marked.set(key, mark);
    try {
      await this.#store.markUsed(key, mark);
    } catch (error) {
      this.#logger.warn('could not mark the scope in use', { key, error: describe(error) });
    }
  }
}
