import type { LeaseHolder, RefreshFailure, StoredItem } from './ports.js';
import { sameFailure } from './refresh-failure.js';

/**
 * The most two instances' clocks are assumed to disagree by. A lease counts as
 * run out by its `lease_until` alone only this long after it, so an instance
 * whose clock runs ahead never takes a live lease from one whose clock lags.
 * One constant, so the admin `status` shows a lease as held exactly while
 * `refresh` would answer busy.
 */
export const MAX_CLOCK_SKEW_MS = 60_000;

/**
 * A waiter's view of another instance's refresh, judged by the waiter's own
 * clock only. The holder's `lease_until` is a time on the holder's clock, so
 * comparing it with ours would hand a live lease to any instance whose clock
 * runs ahead by more than the lease. Instead, as leader election does it, a
 * lease is taken over once this waiter has seen it unchanged for a whole lease
 * period, and a failure counts as new when it differs from the one first seen.
 * (refresh-failure.ts's FailureBackoff treats `failed_at` the same way.)
 */
export class LeaseWatch {
  readonly #leaseMs: number;
  readonly #firstFailure: RefreshFailure | undefined;
  #seen: LeaseHolder | undefined;
  #seenSinceMs: number;

  /** `item` as first read at `atMs`, this instance's clock. */
  constructor(item: StoredItem | undefined, atMs: number, leaseMs: number) {
    this.#leaseMs = leaseMs;
    this.#firstFailure = item?.failure;
    this.#seen = holderOf(item);
    this.#seenSinceMs = atMs;
  }

  /**
   * Notes the item read at `atMs`. Answers whether the lease may be taken now:
   * `free` (none held), `stale` (the same lease seen for a whole lease period,
   * which the taker must name so that a lease renewed meanwhile is not taken),
   * or `held`.
   */
  observe(
    item: StoredItem | undefined,
    atMs: number,
  ):
    | { readonly lease: 'free' }
    | { readonly lease: 'stale'; readonly holder: LeaseHolder }
    | { readonly lease: 'held' } {
    const holder = holderOf(item);
    if (!holder) {
      this.#seen = undefined;
      return { lease: 'free' };
    }
    if (!this.#seen || !sameHolder(this.#seen, holder)) {
      this.#seen = holder;
      this.#seenSinceMs = atMs;
      return { lease: 'held' };
    }
    return atMs - this.#seenSinceMs >= this.#leaseMs
      ? { lease: 'stale', holder }
      : { lease: 'held' };
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
