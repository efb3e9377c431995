import { epochSeconds } from './clock.js';
import { describe } from './describe-error.js';
import { SealerUnavailableError, StoreUnavailableError } from './errors.js';
import { isServable } from './freshness.js';
import type { MemoryTokenCache } from './memory-cache.js';
import { mintToken } from './mint-token.js';
import type { LeaseHolder, ProviderCredentials, RefreshFailure, Revision, Token } from './ports.js';
import { afterRecordedFailure, failureOf } from './refresh-failure.js';
import type { RevocationDamping } from './revocation.js';
import {
  outcome,
  type TokenServiceDeps,
  type VendOutcome,
  type VendResult,
} from './token-service-types.js';
import type { UseMarks } from './use-marks.js';

/** A lease holder's requests to the provider end this long before its lease does. */
const LEASE_MARGIN_MS = 500;

/**
 * One lease this instance holds: on `key`, written at `takenAtMs` (sent then)
 * to end at `untilMs`, both on this instance's clock.
 */
export interface HeldLease {
  readonly key: string;
  readonly takenAtMs: number;
  readonly untilMs: number;
}

/** Counts and logs a token store failure the caller works around (degraded service). */
export function storeFailed(
  deps: Pick<TokenServiceDeps, 'count' | 'logger'>,
  operation: string,
  error: unknown,
): void {
  deps.count?.('Degraded');
  deps.logger.warn('token store unavailable; serving degraded', {
    operation,
    error: describe(error),
  });
}

/** A mint under a lease: the token served, and what kept it out of the table, if anything did. */
export interface MintResult extends VendResult {
  /** Sealing or storing failed (the token was served degraded): that error. */
  readonly notStored?: unknown;
  /** The lease was taken over before the token was stored: the taker stores its own. */
  readonly takenOver?: true;
}

/**
 * One instance's leases (docs/cache-design.md, "The lease"): taking a lease,
 * minting under it and storing the token, and giving it up. The token
 * service decides when; this is how.
 */
export class Leases {
  readonly #deps: TokenServiceDeps;
  readonly #l1: MemoryTokenCache;
  readonly #useMarks: UseMarks;
  readonly #damping: RevocationDamping;
  readonly #leaseMs: number;
  readonly #failureBackoffMs: number;
  /** The end of this instance's last lease attempt: see end. */
  #lastLeaseEnd = 0;
  #lastMintMs: number | undefined;

  constructor(
    deps: TokenServiceDeps,
    memory: {
      readonly l1: MemoryTokenCache;
      readonly useMarks: UseMarks;
      readonly damping: RevocationDamping;
    },
    config: { readonly leaseMs: number; readonly failureBackoffMs: number },
  ) {
    this.#deps = deps;
    this.#l1 = memory.l1;
    this.#useMarks = memory.useMarks;
    this.#damping = memory.damping;
    this.#leaseMs = config.leaseMs;
    this.#failureBackoffMs = config.failureBackoffMs;
  }

  /** How long this instance's last mint took (ms), for waiters without a stored figure. */
  get lastMintMs(): number | undefined {
    return this.#lastMintMs;
  }

  /**
   * Takes this instance's lease on `key` if it is free or is `holder` (watched
   * unchanged for a lease period: lease-watch.ts), never by comparing its end
   * with this clock, and, given `seenRevision`, only while the stored token is
   * still the one read.
   * Answers the lease taken, or undefined when not taken.
   */
  async take(
    key: string,
    nowMs: number,
    seenRevision?: Revision,
    holder?: LeaseHolder,
  ): Promise<HeldLease | undefined> {
    const attempt = await this.attempt(key, nowMs, seenRevision, holder);
    return attempt.lease;
  }

  /**
   * As `take`, saying also whether an attempt that took nothing was
   * throttled (refused for the rate, not by the lease condition): a waiter
   * that only ever meets that, while nobody holds the lease, is waiting on a
   * table that takes no writes, not on another caller.
   */
  async attempt(
    key: string,
    nowMs: number,
    seenRevision?: Revision,
    holder?: LeaseHolder,
  ): Promise<{ readonly lease?: HeldLease; readonly throttled?: StoreUnavailableError }> {
    const lease = this.next(key, nowMs);
    try {
      const taken = await this.#deps.store.tryAcquireLease(
        key,
        this.#deps.instanceId,
        nowMs,
        lease.untilMs,
        seenRevision,
        holder ? { holder } : {},
      );
      return taken ? { lease } : {};
    } catch (error) {
      // Throttled: the item is hot, most likely with others after the same
      // lease. Not taken; this caller waits like any other (see TokenService).
      if (error instanceof StoreUnavailableError && error.throttled) return { throttled: error };
      throw error;
    }
  }

  /**
   * The lease an attempt at `nowMs` asks for: ending one lease period later,
   * and never at the same end twice in this instance. The stores take a
   * refusal that shows the caller's own owner and end for its own applied
   * write (a lost answer), so two attempts of one instance in one millisecond
   * (a refresh beside a vend, or a caller that stopped joining a flight) must differ.
   */
  next(key: string, nowMs: number): HeldLease {
    this.#lastLeaseEnd = Math.max(nowMs + this.#leaseMs, this.#lastLeaseEnd + 1);
    return { key, takenAtMs: nowMs, untilMs: this.#lastLeaseEnd };
  }

  /**
   * Gives the lease up; a store failure here only delays others until the
   * lease runs out. Logged, not counted as `Degraded`: it degrades no vend
   * (the caller is answered as it would be), and a vend whose store failed
   * first was counted once already.
   */
  async release(lease: HeldLease, failure?: RefreshFailure): Promise<void> {
    try {
      await this.#deps.store.releaseLease(lease.key, this.#deps.instanceId, failure, lease.untilMs);
    } catch (error) {
      this.#deps.logger.warn('token store unavailable; the lease is left to run out', {
        operation: 'release lease',
        error: describe(error),
      });
    }
  }

  /** Mints upstream (mint-token.ts: the 401 re-read included). */
  #mint(scope: string | undefined, credentials: ProviderCredentials, deadlineMs: number) {
    return mintToken(this.#deps, scope, credentials, deadlineMs);
  }

  /**
   * Mints under `lease` (this instance's, on `key`, until `untilMs` on this
   * clock) and stores the token. Every request to the provider is answered,
   * or given up, half a second before the lease runs out, counted from when
   * it was written and not from when its answer came: waiters take the lease
   * over once it has run out, and a request still out then could mint twice.
   */
  async mintUnder(
    lease: HeldLease,
    scope: string | undefined,
    credentials: ProviderCredentials,
    servable: Token | undefined,
    minTtl: number,
    options: { flags?: Partial<VendOutcome>; replacesRevoked?: boolean; forVend?: boolean } = {},
  ): Promise<MintResult> {
    const { key } = lease;
    const owner = this.#deps.instanceId;
    const flags = options.flags ?? {};
    let token: Token;
    try {
      const startedMs = this.#deps.clock.now();
      // One lease period from the write, not the lease's end: an end pushed
      // later (two attempts in one millisecond, or a clock stepped back) is
      // not what waiters count; they take over a lease period after seeing it.
      const deadlineMs = lease.takenAtMs + this.#leaseMs - LEASE_MARGIN_MS;
      const minted = await this.#mint(scope, credentials, deadlineMs);
      // A duration on this instance's own clock: waiters shape their polls by it.
      const mintMs = Math.max(0, this.#deps.clock.now() - startedMs);
      this.#lastMintMs = mintMs;
      token = { ...minted, mintMs, ...(options.replacesRevoked ? { replacesRevoked: true } : {}) };
      // This instance knows a replacement from its answer on: its damping
      // counts from here, on this clock (revocation.ts), not from issued_at.
      this.#damping.note(key, token, this.#deps.clock.now());
    } catch (error) {
      await this.release(lease, failureOf(error, this.#deps.clock.now()));
      if (servable && isServable(servable, minTtl, epochSeconds(this.#deps.clock))) {
        this.#deps.logger.warn('refresh failed; serving the current token', {
          scope: scope ?? 'unscoped',
          error: describe(error),
        });
        return { token: servable, outcome: outcome('l2', flags) };
      }
      throw afterRecordedFailure(error, this.#failureBackoffMs);
    }
    let degraded = flags.degraded ?? false;
    let notStored: unknown;
    let takenOver = false;
    try {
      const sealed = await this.#deps.sealer.seal(token.accessToken, key);
      const { accessToken: _, ...meta } = token;
      // Minted for a vend: the store marks the scope used in the same write
      // (use-marks.ts), so neither this vend nor the waiters that read the
      // item write a mark of their own. A refresh nobody vended marks nothing.
      const usedAt = options.forVend
        ? Math.max(epochSeconds(this.#deps.clock), token.issuedAt)
        : undefined;
      const stored = await this.#deps.store.putToken(key, { ...meta, sealed }, owner, {
        leaseUntil: lease.untilMs,
        ...(usedAt === undefined ? {} : { usedAt }),
      });
      if (stored && usedAt !== undefined) this.#useMarks.seen(key, { lastUsedAt: usedAt });
      if (!stored) {
        takenOver = true;
        this.#deps.logger.warn('lease was taken over before the new token was stored', {
          scope: scope ?? 'unscoped',
        });
      }
    } catch (error) {
      // Sealing or storing failed: serve the token, and free the lease for
      // others. A sealer that cannot answer is recorded (refresh-failure.ts,
      // SEALER_UNAVAILABLE), so they serve degraded rather than try it in turn.
      storeFailed(this.#deps, 'store token', error);
      degraded = true;
      notStored = error;
      const sealerDown = error instanceof SealerUnavailableError;
      await this.release(lease, sealerDown ? failureOf(error, this.#deps.clock.now()) : undefined);
    }
    this.#l1.set(key, token, epochSeconds(this.#deps.clock));
    return {
      token,
      outcome: outcome('provider', {
        ...flags,
        degraded,
        refreshed: servable !== undefined || flags.refreshed === true,
      }),
      ...(notStored === undefined ? {} : { notStored }),
      ...(takenOver ? { takenOver } : {}),
    };
  }
}
