import type { LeaseHolder, RefreshFailure, StoredItem } from './ports.js';
import { sameFailure } from './refresh-failure.js';

/** What a reader may do about the lease an item shows, judged by its own watching. */
export type LeaseState =
  | { readonly lease: 'free' }
  | { readonly lease: 'stale'; readonly holder: LeaseHolder }
  | { readonly lease: 'held' };

/**
 * The leases one instance has seen, per item, each with when this instance
 * first saw it (its own clock). The holder's `lease_until` is a time on the
 * holder's clock, so comparing it with ours, with any tolerance, hands a live
 * lease to an instance whose clock runs ahead of the holder's by more than
 * the lease plus that tolerance (a second mint), and keeps a dead one from an
 * instance whose clock lags. Instead, as leader election does it, a lease may
 * be taken over once this instance has seen it unchanged for a whole lease
 * period, whoever looked (a vend that was served the current token, a waiter,
 * a refresh), and never earlier, however long ago its end looks.
 */
export class LeaseSightings {
  readonly #leaseMs: number;
  readonly #seen = new Map<string, { readonly holder: LeaseHolder; readonly sinceMs: number }>();

  constructor(leaseMs: number) {
    this.#leaseMs = leaseMs;
  }

  /**
   * Notes the lease of `key`'s item as read at `atMs` (this instance's clock).
   * Answers whether it may be taken now: `free` (none held), `stale` (the same
   * lease seen for a whole lease period, which the taker must name so that a
   * lease renewed meanwhile is not taken), or `held`.
   */
  observe(key: string, item: StoredItem | undefined, atMs: number): LeaseState {
    const holder = holderOf(item);
    if (!holder) {
      this.#seen.delete(key);
      return { lease: 'free' };
    }
    const seen = this.#seen.get(key);
    if (!seen || !sameHolder(seen.holder, holder)) {
      this.#seen.set(key, { holder, sinceMs: atMs });
      return { lease: 'held' };
    }
    return atMs - seen.sinceMs >= this.#leaseMs ? { lease: 'stale', holder } : { lease: 'held' };
  }
}

/**
 * A waiter's view of another instance's refresh, judged by the waiter's own
 * clock only: the lease through LeaseSightings (shared with the instance's
 * other lookups when given, so a lease it watched before this wait counts),
 * and a failure counts as new when it differs from the one first seen.
 * (refresh-failure.ts's FailureBackoff treats `failed_at` the same way.)
 */
export class LeaseWatch {
  readonly #firstFailure: RefreshFailure | undefined;
  readonly #sightings: LeaseSightings;
  readonly #key: string;

  /** `item` as first read at `atMs`, this instance's clock. */
  constructor(
    item: StoredItem | undefined,
    atMs: number,
    leaseMs: number,
    shared?: { readonly sightings: LeaseSightings; readonly key: string },
  ) {
    this.#firstFailure = item?.failure;
    this.#sightings = shared?.sightings ?? new LeaseSightings(leaseMs);
    this.#key = shared?.key ?? '';
    this.#sightings.observe(this.#key, item, atMs);
  }

  /** Notes the item read at `atMs`: see LeaseSightings.observe. */
  observe(item: StoredItem | undefined, atMs: number): LeaseState {
    return this.#sightings.observe(this.#key, item, atMs);
  }

  /** A failure recorded since the first read: the holder gave up. */
  newFailure(item: StoredItem | undefined): RefreshFailure | undefined {
    const failure = item?.failure;
    return failure && !sameFailure(failure, this.#firstFailure) ? failure : undefined;
  }
}

function holderOf(item: StoredItem | undefined): LeaseHolder | undefined {
  if (item?.leaseUntil === undefined) return undefined;
  return {
    untilMs: item.leaseUntil,
    ...(item.leaseOwner === undefined ? {} : { owner: item.leaseOwner }),
  };
}

function sameHolder(a: LeaseHolder, b: LeaseHolder): boolean {
  return a.untilMs === b.untilMs && a.owner === b.owner;
}
