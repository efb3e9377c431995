import { StoreUnavailableError } from '../../functions/core/errors.js';
import {
  type FirstLook,
  type LeaseTakeover,
  NO_REVISION,
  type RefreshFailure,
  type Revision,
  type StoredItem,
  type TokenStore,
} from '../../functions/core/ports.js';

/** Whether two revisions name the same stored token (as the DynamoDB condition compares them). */
function sameRevision(a: Revision, b: Revision): boolean {
  const sameBytes =
    a.sealed === null || b.sealed === null
      ? a.sealed === b.sealed
      : Buffer.from(a.sealed).equals(Buffer.from(b.sealed));
  return a.expiresAt === b.expiresAt && sameBytes;
}

/** An in-memory TokenStore with DynamoDB's conditional semantics, for unit tests. */
export class MemoryTokenStore implements TokenStore {
  readonly items = new Map<string, StoredItem>();
  /** When set, every call throws as an unreachable DynamoDB would. */
  down = false;
  calls = 0;

  #check(): void {
    this.calls++;
    if (this.down) throw new StoreUnavailableError('DynamoDB GetItem failed (TimeoutError)');
  }

  async get(pk: string): Promise<StoredItem | undefined> {
    this.#check();
    return this.items.get(pk);
  }

  async tryAcquireLease(
    pk: string,
    owner: string,
    _nowMs: number,
    untilMs: number,
    seenRevision?: Revision,
    takeover: LeaseTakeover = {},
  ): Promise<boolean> {
    this.#check();
    const item = this.items.get(pk) ?? { pk, revision: NO_REVISION };
    // This very lease: the write was applied, its answer lost, the retry refused.
    if (item.leaseOwner === owner && item.leaseUntil === untilMs) return true;
    const { holder } = takeover;
    const watched =
      holder !== undefined &&
      item.leaseUntil === holder.untilMs &&
      item.leaseOwner === holder.owner;
    if (item.leaseUntil !== undefined && !watched) return false;
    if (seenRevision !== undefined && !sameRevision(item.revision, seenRevision)) return false;
    this.items.set(pk, { ...item, leaseOwner: owner, leaseUntil: untilMs });
    return true;
  }

  async leaseIfAbsent(
    pk: string,
    owner: string,
    _nowMs: number,
    untilMs: number,
  ): Promise<FirstLook> {
    this.#check();
    const item = this.items.get(pk);
    if (item?.leaseOwner === owner && item.leaseUntil === untilMs) return { leased: true };
    if (item) return { leased: false, item };
    this.items.set(pk, { pk, revision: NO_REVISION, leaseOwner: owner, leaseUntil: untilMs });
    return { leased: true };
  }

  async putToken(
    pk: string,
    token: NonNullable<StoredItem['token']>,
    owner: string,
    options: { readonly usedAt?: number; readonly leaseUntil?: number } = {},
  ): Promise<boolean> {
    this.#check();
    const item = this.items.get(pk);
    const held =
      item?.leaseOwner === owner &&
      (options.leaseUntil === undefined || item.leaseUntil === options.leaseUntil);
    if (!held) {
      // Refused; this very token, though: the write was applied, its answer
      // lost, the retry refused (as the DynamoDB store reads the refusal).
      const sealed = item?.token?.sealed;
      return sealed !== undefined && Buffer.from(sealed).equals(Buffer.from(token.sealed));
    }
    const lastUsedAt = options.usedAt ?? item.lastUsedAt;
    this.items.set(pk, {
      pk,
      token,
      revision: { expiresAt: token.expiresAt, sealed: token.sealed },
      ...(lastUsedAt === undefined ? {} : { lastUsedAt }),
    });
    return true;
  }

  async releaseLease(
    pk: string,
    owner: string,
    failure?: RefreshFailure,
    leaseUntil?: number,
  ): Promise<void> {
    this.#check();
    const item = this.items.get(pk);
    if (item?.leaseOwner !== owner) return;
    if (leaseUntil !== undefined && item.leaseUntil !== leaseUntil) return;
    const { leaseOwner: _o, leaseUntil: _u, ...rest } = item;
    this.items.set(pk, failure ? { ...rest, failure } : rest);
  }

  async markUsed(pk: string, atSeconds: number): Promise<void> {
    this.#check();
    const item = this.items.get(pk);
    if (!item || (item.lastUsedAt ?? Number.NEGATIVE_INFINITY) >= atSeconds) return;
    this.items.set(pk, { ...item, lastUsedAt: atSeconds });
  }

  async delete(pk: string): Promise<boolean> {
    this.#check();
    return this.items.delete(pk);
  }

  async list(): Promise<StoredItem[]> {
    this.#check();
    return [...this.items.values()];
  }
}
