import { describe } from './describe-error.js';
import type { StoredItem, TokenStore } from './ports.js';
import type { CoreLogger } from './token-service-types.js';

/**
 * Marks scopes in use in the table (`last_used_at`), so the scheduled refresh
 * keeps in-use scopes fresh (refresh/in-use.ts). The refresh counts a scope as
 * in use when its current token has been vended at all since it was minted
 * (a mark no older than the token), which is what a mark must record: one
 * write per token. A token minted for a vend carries its mark in the write
 * that stores it (token-service.ts); otherwise the first vend that finds no
 * mark covering the token writes one. A mark
 * another instance made counts once read with the item, so sparse traffic
 * spread over many instances writes about once per token, not once per vend
 * or per instance (a mark per interval cost about half a write per vend).
 */
export class UseMarks {
  readonly #store: Pick<TokenStore, 'markUsed'>;
  readonly #logger: CoreLogger;
  /** Per item key: the latest mark this instance made or read (epoch seconds). */
  readonly #marked = new Map<string, number>();

  constructor(store: Pick<TokenStore, 'markUsed'>, logger: CoreLogger) {
    this.#store = store;
    this.#logger = logger;
  }

  /**
   * Takes note of the mark on an item just read (or just written with a
   * token); a read never moves a mark back.
   */
  seen(key: string, item: Pick<StoredItem, 'lastUsedAt'> | undefined): void {
    const at = item?.lastUsedAt;
    if (at !== undefined && at > (this.#marked.get(key) ?? Number.NEGATIVE_INFINITY)) {
      this.#marked.set(key, at);
    }
  }

  /**
   * Marks `key` used by a vend at `now` of a token issued at `issuedAt`,
   * unless a mark made or read here already covers that token. The mark is
   * dated no earlier than `issuedAt`: the vend came after the mint, whatever
   * this instance's clock says. A failure loses this instance's mark of this
   * token only: the next instance that reads the item without it writes it.
   */
  async note(key: string, now: number, issuedAt: number): Promise<void> {
    const last = this.#marked.get(key);
    if (last !== undefined && last >= issuedAt) return;
    const mark = Math.max(now, issuedAt);
    this.#marked.set(key, mark);
    try {
      await this.#store.markUsed(key, mark);
    } catch (error) {
      this.#logger.warn('could not mark the scope in use', { key, error: describe(error) });
    }
  }
}
