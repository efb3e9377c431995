import { StoreUnavailableError } from './errors.js';
import type { HeldLease } from './leases.js';
import { jittered, MIN_POLL_STEP_MS } from './poll-schedule.js';
import type { ProviderCredentials, StoredItem } from './ports.js';
import type { TokenServiceDeps } from './token-service-types.js';

/** What a lookup's first call found: the item, or none and this caller's new lease. */
export type FirstLookResult =
  | {
      readonly leased: true;
      readonly credentials: ProviderCredentials;
      /** The lease taken. */
      readonly lease: HeldLease;
    }
  | { readonly leased: false; readonly item: StoredItem | undefined };

export interface FirstLookLimits {
  /** The lease an attempt on `key` at `nowMs` asks for (Leases.next in leases.ts). */
  readonly lease: (key: string, nowMs: number) => HeldLease;
  /** How long a throttled read is retried, milliseconds (a waiter's bound). */
  readonly maxWaitMs: number;
  /** The longest back-off between two throttled reads. */
  readonly pollMaxMs: number;
}

/**
 * A lookup's first call to the table (docs/cache-design.md, "The lease"). On
 * an item this instance has not seen exist (a cold instance) it is one call
 * that takes the lease if there is no item (`leaseIfAbsent`), so in a cold
 * stampede the winner mints after one round trip and the others learn of its
 * lease in the same call; only with credentials to mint with, so a lease is
 * never taken that the instance cannot use. Otherwise, or when that call
 * fails (throttled, or writes failing while reads work), a strongly consistent read.
 */
export class FirstLook {
  readonly #deps: Pick<TokenServiceDeps, 'store' | 'clock' | 'random' | 'instanceId'>;
  readonly #limits: FirstLookLimits;
  /**
   * Keys whose item this instance has seen exist: its next look at them is a
   * plain read. Forgetting tokens keeps this: an item an operator deleted
   * costs the next lookup a read and a lease attempt, as before.
   */
  readonly #seen = new Set<string>();

  constructor(
    deps: Pick<TokenServiceDeps, 'store' | 'clock' | 'random' | 'instanceId'>,
    limits: FirstLookLimits,
  ) {
    this.#deps = deps;
    this.#limits = limits;
  }

  async look(key: string, known: ProviderCredentials | undefined): Promise<FirstLookResult> {
    const { clock, store, instanceId } = this.#deps;
    if (known && !this.#seen.has(key)) {
      const nowMs = clock.now();
      const lease = this.#limits.lease(key, nowMs);
      try {
        const look = await store.leaseIfAbsent(key, instanceId, nowMs, lease.untilMs);
        this.#seen.add(key);
        return look.leased ? { leased: true, credentials: known, lease } : look;
      } catch (error) {
        // Throttled: the item is hot, so it most likely exists. Look again
        // with reads, of which a partition serves three times as many as
        // writes, rather than add writes that compete with the holder's store.
        // Failed otherwise: writes may fail while reads work (a partial
        // outage); a token the table still gives beats a degraded mint, and a
        // table that is down fails the read too, to degraded mode as before.
        if (!(error instanceof StoreUnavailableError)) throw error;
      }
    }
    const item = await this.#patiently(() => store.get(key));
    if (item) this.#seen.add(key);
    return { leased: false, item };
  }

  /**
   * A throttled read (many instances on one hot item) is tried again after a
   * short jittered back-off, within the waiters' bound, instead of degrading:
   * degraded mode would have every one of those instances mint. Any other
   * failure is an outage, as before.
   */
  async #patiently<T>(call: () => Promise<T>): Promise<T> {
    const { clock, random } = this.#deps;
    const { maxWaitMs, pollMaxMs } = this.#limits;
    const deadline = clock.now() + maxWaitMs;
    for (let delay = MIN_POLL_STEP_MS * 2; ; delay = Math.min(2 * delay, pollMaxMs)) {
      try {
        return await call();
      } catch (error) {
        const throttled = error instanceof StoreUnavailableError && error.throttled;
        if (!throttled || clock.now() + delay >= deadline) throw error;
      }
      await clock.sleep(jittered(delay, random));
    }
  }
}
