import { epochSeconds } from './clock.js';
import { DegradedMode } from './degraded-mode.js';
import {
  credentialsUnavailable,
  SealerUnavailableError,
  StoreUnavailableError,
  UpstreamUnavailableError,
} from './errors.js';
import { FirstLook } from './first-look.js';
import { isFresh, isServable } from './freshness.js';
import { tokenKey } from './item-keys.js';
import { ItemReader } from './item-reader.js';
import { LeaseSightings, type LeaseState, LeaseWatch } from './lease-watch.js';
import { Leases, storeFailed } from './leases.js';
import { MemoryTokenCache, SingleFlight } from './memory-cache.js';
import { PollSchedule } from './poll-schedule.js';
import type { LeaseHolder, ProviderCredentials, StoredItem, Token } from './ports.js';
import { backoffOf, FailureBackoff, recentFailure } from './refresh-failure.js';
import { RevocationDamping } from './revocation.js';
import {
  outcome,
  type RefreshResult,
  type TokenServiceConfig,
  type TokenServiceDeps,
  type VendResult,
} from './token-service-types.js';
import { UseMarks } from './use-marks.js';
import { readCachedCredentials, VersionCheck } from './version-check.js';

export { tokenKey } from './item-keys.js';
export { REVOCATION_MIN_AGE_SECONDS } from './revocation.js';
export type {
  CoreLogger,
  CoreMetric,
  Minter,
  RefreshResult,
  TokenServiceConfig,
  TokenServiceDeps,
  VendOutcome,
  VendResult,
} from './token-service-types.js';

/**
 * A caller that joined a flight whose token cannot meet its min_ttl checks
 * again; after this many joins it looks up on its own, so it always progresses.
 */
const MAX_FLIGHT_JOINS = 3;

/** A mint's expected duration before this instance or the table knows one. */
export const DEFAULT_EXPECTED_MINT_MS = 100;

/**
 * What a lookup found: the result for whoever shares it, and, when this
 * lookup won the lease while a servable token existed, the refresh under way
 * that only the caller who started it waits for.
 */
interface Lookup {
  readonly result: VendResult;
  readonly refreshing?: Promise<VendResult>;
}

/**
 * The two-tier token cache (docs/cache-design.md): L1 in memory, L2 in DynamoDB,
 * a conditional-write lease so one caller across all instances refreshes,
 * refresh-ahead, and degraded service when DynamoDB or Secrets Manager fails.
 * The freshness rules themselves live in freshness.ts; this is the protocol.
 */
export class TokenService {
  readonly #deps: TokenServiceDeps;
  readonly #l1: MemoryTokenCache;
  readonly #flights = new SingleFlight<Lookup>();
  readonly #refreshAhead: number;
  readonly #leaseMs: number;
  readonly #maxWaitMs: number;
  readonly #expectedMintMs: number;
  readonly #pollMaxMs: number;
  readonly #failureBackoffMs: number;
  readonly #backoff: FailureBackoff;
  readonly #degraded: DegradedMode;
  readonly #items: ItemReader;
  readonly #useMarks: UseMarks;
  readonly #firstLook: FirstLook;
  readonly #leases: Leases;
  readonly #sightings: LeaseSightings;
  /** Which replacements of reported tokens this instance knows, and since when (revocation.ts). */
  readonly #damping = new RevocationDamping();

  constructor(deps: TokenServiceDeps, config: TokenServiceConfig = {}) {
    this.#deps = deps;
    this.#l1 = new MemoryTokenCache(config.l1MaxAgeSeconds);
    this.#refreshAhead = config.refreshAheadSeconds ?? 900;
    this.#leaseMs = config.leaseMs ?? 10_000;
    this.#maxWaitMs = config.maxWaitMs ?? this.#leaseMs + 3000;
    this.#expectedMintMs = config.expectedMintMs ?? DEFAULT_EXPECTED_MINT_MS;
    this.#pollMaxMs = config.pollMaxMs ?? 800;
    this.#failureBackoffMs = config.failureBackoffMs ?? 5000;
    this.#backoff = new FailureBackoff(this.#failureBackoffMs);
    this.#sightings = new LeaseSightings(this.#leaseMs);
    this.#items = new ItemReader(deps, new VersionCheck(deps.credentials, deps.clock));
    this.#degraded = new DegradedMode(deps, this.#l1, this.#damping, {
      leaseMs: this.#leaseMs,
      failureBackoffMs: this.#failureBackoffMs,
    });
    this.#useMarks = new UseMarks(deps.store, deps.logger);
    this.#leases = new Leases(
      deps,
      { l1: this.#l1, useMarks: this.#useMarks, damping: this.#damping },
      { leaseMs: this.#leaseMs, failureBackoffMs: this.#failureBackoffMs },
    );
    this.#firstLook = new FirstLook(deps, {
      lease: (key, nowMs) => this.#leases.next(key, nowMs),
      maxWaitMs: this.#maxWaitMs,
      pollMaxMs: this.#pollMaxMs,
    });
  }

  /**
   * A token for `scope` (undefined: unscoped) with more than `minTtl` seconds
   * left. Concurrent callers of one scope share one lookup whatever their
   * min_ttl; a caller whose min_ttl the shared result cannot meet checks again.
   * `revoked`: the fingerprint of a token the provider refused; that token is
   * never served to this caller but replaced under the lease, so callers
   * reporting the same token cause one mint.
   */
  async getToken(scope: string | undefined, minTtl: number, revoked?: string): Promise<VendResult> {
    const key = tokenKey(scope);
    const result = await this.#getToken(key, scope, minTtl, revoked);
    // No mark while DynamoDB fails: it would only add a timeout to the vend.
    if (!result.outcome.degraded) {
      await this.#useMarks.note(key, this.#now(), result.token.issuedAt);
    }
    return result;
  }

  async #getToken(
    key: string,
    scope: string | undefined,
    minTtl: number,
    revoked: string | undefined,
  ): Promise<VendResult> {
    for (let joins = 0; ; ) {
      const credentials = await readCachedCredentials(this.#deps.credentials);
      const cached = this.#l1.get(key, this.#now());
      if (cached && this.#revoked(key, cached, revoked)) this.#l1.delete(key);
      else if (cached && credentials && this.#fresh(cached, minTtl, credentials)) {
        return { token: cached, outcome: outcome('l1') };
      }
      const lookup = () => this.#lookup(key, scope, minTtl, credentials, revoked);
      if (joins >= MAX_FLIGHT_JOINS) {
        const own = await lookup();
        return own.refreshing ?? own.result;
      }
      const flight = this.#flights.run(key, lookup);
      const { result, refreshing } = await flight.promise;
      // The caller that started the lookup waits for its own refresh; the
      // callers that joined it keep receiving the current token meanwhile.
      if (!flight.joined) return refreshing ?? result;
      if (
        isServable(result.token, minTtl, this.#now()) &&
        !this.#revoked(key, result.token, revoked)
      ) {
        return result;
      }
      joins++;
    }
  }

  /**
   * Mints a new token for `scope` under the same lease as the vend path.
   * Forced (operator refresh) by default; with `dueWithinSeconds` (the
   * scheduled refresh) only when the stored token would enter its
   * refresh-ahead window, or stop being current, within that many seconds.
   * `busy` when another caller holds the lease or stored a token since the
   * read; errors are the vend path's (docs/vend-api.md).
   */
  async refresh(
    scope: string | undefined,
    options: { dueWithinSeconds?: number } = {},
  ): Promise<RefreshResult> {
    const key = tokenKey(scope);
    const known = await readCachedCredentials(this.#deps.credentials);
    const item = await this.#deps.store.get(key);
    const seen = this.#sightings.observe(key, item, this.#deps.clock.now());
    const view = await this.#items.view(item, known);
    this.#damping.note(key, view.token, this.#deps.clock.now());
    if (!view.canReplace || !view.credentials) throw credentialsUnavailable();
    const { dueWithinSeconds } = options;
    if (
      dueWithinSeconds !== undefined &&
      view.token &&
      this.#fresh(view.token, 0, view.credentials, this.#now() + dueWithinSeconds)
    ) {
      return { status: 'fresh', expiresAt: view.token.expiresAt };
    }
    const nowMs = this.#deps.clock.now();
    if (dueWithinSeconds !== undefined && this.#backoff.check(key, item?.failure, nowMs)) {
      return { status: 'busy' };
    }
    // A lease is judged by this instance's own watching (lease-watch.ts).
    if (seen.lease === 'held') return { status: 'busy' };
    const lease = await this.#leases.take(key, nowMs, view.revision, holderOf(seen));
    if (lease === undefined) return { status: 'busy' };
    const minted = await this.#leases.mintUnder(lease, scope, view.credentials, undefined, 0);
    // A token that never reached the table refreshed nothing: say so (a
    // StoreUnavailableError or SealerUnavailableError, or another caller's
    // takeover: busy), not "refreshed".
    if (minted.notStored !== undefined) throw minted.notStored;
    if (minted.takenOver) return { status: 'busy' };
    return { status: 'refreshed', expiresAt: minted.token.expiresAt };
  }

  /** Forgets this instance's L1 entries (tests, operator invalidation). */
  forget(scope?: string): void {
    if (scope === undefined) this.#l1.clear();
    else this.#l1.delete(tokenKey(scope));
  }

  /** Forgets this instance's L1 entry of one scope (undefined: the unscoped token). */
  forgetScope(scope: string | undefined): void {
    this.#l1.delete(tokenKey(scope));
  }

  /** Any StoreUnavailableError on the shared path turns into degraded service. */
  async #lookup(
    key: string,
    scope: string | undefined,
    minTtl: number,
    credentials: ProviderCredentials | undefined,
    revoked: string | undefined,
  ): Promise<Lookup> {
    // A servable token read from the table before a later call failed (the
    // lease write, say): degraded mode falls back to it rather than answer 503.
    const read: SharedRead = {};
    try {
      return await this.#fromShared(key, scope, minTtl, credentials, revoked, read);
    } catch (error) {
      if (error instanceof StoreUnavailableError) {
        // 'lookup': any call of it (a read, the lease write, a poll); the error names which.
        storeFailed(this.#deps, error instanceof SealerUnavailableError ? 'kms' : 'lookup', error);
        return {
          result: await this.#degraded.serve(
            key,
            scope,
            minTtl,
            credentials,
            revoked,
            read.servable,
          ),
        };
      }
      throw error;
    }
  }

  async #fromShared(
    key: string,
    scope: string | undefined,
    minTtl: number,
    known: ProviderCredentials | undefined,
    revoked: string | undefined,
    read: SharedRead,
  ): Promise<Lookup> {
    // The waiters' bound counts from here: a first look kept patient by a
    // throttled item uses part of it, so look and wait together stay within
    // one bound, and a mint after them within the function's timeout.
    const startedMs = this.#deps.clock.now();
    const look = await this.#firstLook.look(key, known);
    if (look.leased) {
      // There was no item: this lookup created it, holding the lease.
      return {
        result: await this.#leases.mintUnder(
          look.lease,
          scope,
          look.credentials,
          undefined,
          minTtl,
          { forVend: true },
        ),
      };
    }
    const { item } = look;
    const readAtMs = this.#deps.clock.now();
    const seen = this.#sightings.observe(key, item, readAtMs);
    this.#useMarks.seen(key, item);
    const view = await this.#items.view(item, known);
    this.#damping.note(key, view.token, readAtMs);
    // A token the caller reports as revoked is treated as absent: replaced under the lease.
    const reported = view.token !== undefined && this.#revoked(key, view.token, revoked);
    const token = reported ? undefined : view.token;
    if (
      token &&
      view.canReplace &&
      view.credentials &&
      this.#fresh(token, minTtl, view.credentials)
    ) {
      this.#l1.set(key, token, this.#now());
      return { result: { token, outcome: outcome('l2') } };
    }
    const servable = token && isServable(token, minTtl, this.#now()) ? token : undefined;
    if (servable) read.servable = servable;
    const current = servable && { result: { token: servable, outcome: outcome('l2') } };
    if (!view.canReplace || !view.credentials) {
      return { result: this.#serveUnverified(scope, servable) };
    }
    const nowMs = this.#deps.clock.now();
    const backOff = this.#backoff.check(key, item?.failure, nowMs);
    if (backOff) {
      // A refresh failed moments ago: keep serving what we have, or fail fast alike.
      if (current) return current;
      throw backOff;
    }
    // A lease this read shows is held until this instance has watched it
    // unchanged for a lease period, however long ago its end looks by this
    // clock (lease-watch.ts): no attempt, straight to waiting.
    const attempt =
      seen.lease === 'held'
        ? {}
        : await this.#leases.attempt(key, nowMs, view.revision, holderOf(seen));
    const { lease } = attempt;
    if (lease !== undefined) {
      const refreshing = this.#leases.mintUnder(lease, scope, view.credentials, servable, minTtl, {
        replacesRevoked: reported,
        forVend: true,
      });
      // With a servable token, only this caller waits for the new one; a
      // failed refresh falls back to the current token while it still has
      // min_ttl left (never one short of it: then the failure is the answer).
      return current ? { ...current, refreshing } : { result: await refreshing };
    }
    // Another caller refreshes: everyone else keeps receiving the current token.
    if (current) return current;
    const watch = new LeaseWatch(item, readAtMs, this.#leaseMs, {
      sightings: this.#sightings,
      key,
    });
    const schedule = new PollSchedule({
      expectedMintMs: item?.token?.mintMs ?? this.#leases.lastMintMs ?? this.#expectedMintMs,
      maxDelayMs: this.#pollMaxMs,
      random: this.#deps.random,
    });
    return {
      result: await this.#waitForRefresh(key, scope, minTtl, view.credentials, revoked, {
        watch,
        schedule,
        throttled: attempt.throttled,
        startedMs,
      }),
    };
  }

  /**
   * Serves a stored token whose version cannot be checked because the secret
   * cannot be read (degraded), or answers 503 when there is none to serve.
   */
  #serveUnverified(scope: string | undefined, servable: Token | undefined): VendResult {
    if (!servable) throw credentialsUnavailable();
    this.#deps.count?.('Degraded');
    this.#deps.logger.warn('credentials secret unreadable; serving the cached token unverified', {
      scope: scope ?? 'unscoped',
    });
    return { token: servable, outcome: outcome('l2', { degraded: true }) };
  }

  /**
   * Polls while another instance refreshes, on a schedule shaped by how long a
   * mint takes (poll-schedule.ts), so a waiter finds the new token within one
   * short interval of its store and its reads stay bounded. Each poll goes
   * through the same view (version check included) as a first read, so a
   * waiter never serves a token short of min_ttl or of an older version, and
   * never takes over the lease to overwrite a token of a version it has not
   * verified as older. Whether the holder died or gave up is judged by this
   * instance's clock alone (`watch`), so skewed clocks cost no extra mint. A
   * poll DynamoDB throttles (many waiters on one item: a partition serves
   * 3,000 reads a second) is a "not yet", never an outage: degrading would
   * make every waiter mint.
   */
  async #waitForRefresh(
    key: string,
    scope: string | undefined,
    minTtl: number,
    credentials: ProviderCredentials,
    revoked: string | undefined,
    {
      watch,
      schedule,
      throttled,
      startedMs,
    }: {
      watch: LeaseWatch;
      schedule: PollSchedule;
      throttled?: StoreUnavailableError | undefined;
      /** When the lookup began, this instance's clock: the bound counts from then. */
      startedMs: number;
    },
  ): Promise<VendResult> {
    const { clock } = this.#deps;
    // The last lease attempt was throttled while nobody held the lease: until
    // a read shows a holder, nobody is minting (see the end of the wait).
    let unheldThrottled = throttled;
    const deadline = startedMs + this.#maxWaitMs;
    this.#deps.count?.('LeaseWaits');
    while (clock.now() < deadline) {
      await clock.sleep(Math.min(schedule.next(), deadline - clock.now()));
      this.#deps.count?.('LeaseWaitPolls');
      const sentAtMs = clock.now();
      let item: StoredItem | undefined;
      try {
        item = await this.#deps.store.get(key);
      } catch (error) {
        if (!(error instanceof StoreUnavailableError && error.throttled)) throw error;
        // Not seen, so no longer known unheld: on a hot item the holder may be
        // minting now, and a waiter that degraded for a write throttled before
        // would mint again, as every waiter of the stampede would.
        unheldThrottled = undefined;
        schedule.slowDown();
        continue;
      }
      const readAtMs = clock.now();
      schedule.answeredIn(readAtMs - sentAtMs);
      this.#useMarks.seen(key, item);
      const view = await this.#items.view(item, credentials);
      this.#damping.note(key, view.token, readAtMs);
      const servable =
        view.token &&
        isServable(view.token, minTtl, this.#now()) &&
        !this.#revoked(key, view.token, revoked)
          ? view.token
          : undefined;
      if (servable && view.canReplace) {
        this.#l1.set(key, servable, this.#now());
        return { token: servable, outcome: outcome('l2', { waited: true }) };
      }
      if (!view.canReplace || !view.credentials) return this.#serveUnverified(scope, servable);
      const failure = watch.newFailure(item);
      if (failure) {
        throw recentFailure(
          failure.code,
          Math.ceil(backoffOf(failure, this.#failureBackoffMs) / 1000),
        );
      }
      const seen = watch.observe(item, readAtMs);
      if (item?.leaseUntil !== undefined) unheldThrottled = undefined;
      if (seen.lease !== 'held') {
        // The holder died or gave up: take over (unless a token just appeared).
        const attempt = await this.#leases.attempt(key, clock.now(), view.revision, holderOf(seen));
        const { lease } = attempt;
        if (item?.leaseUntil === undefined) unheldThrottled = attempt.throttled;
        if (lease !== undefined) {
          this.#deps.count?.('LeaseTakeovers');
          this.#deps.logger.warn('took over an expired lease', { scope: scope ?? 'unscoped' });
          return this.#leases.mintUnder(lease, scope, view.credentials, undefined, minTtl, {
            flags: { waited: true },
            forVend: true,
            replacesRevoked: view.token !== undefined && this.#revoked(key, view.token, revoked),
          });
        }
      }
    }
    // The last read answered showed nobody holding the lease, the lease write
    // after it was refused for its rate, and no read since was throttled: the
    // table takes no writes, so nobody will store a token. That is the table
    // unavailable (degraded service), not the provider.
    if (unheldThrottled) throw unheldThrottled;
    throw new UpstreamUnavailableError(
      'Timed out waiting for another instance to refresh the token.',
      2,
    );
  }

  #now(): number {
    return epochSeconds(this.#deps.clock);
  }

  /** The caller reported `token` and the report may replace it now (revocation.ts). */
  #revoked(key: string, token: Token, revoked: string | undefined): boolean {
    return this.#damping.isRevoked(key, token, revoked, this.#deps.clock.now());
  }

  /** Fresh (freshness.ts) at `at` (default now) and minted with the current secret. */
  #fresh(
    token: Token,
    minTtl: number,
    credentials: ProviderCredentials,
    at = this.#now(),
  ): boolean {
    return (
      token.credentialsVersion === credentials.version &&
      isFresh(token, minTtl, at, this.#refreshAhead)
    );
  }
}

/** What a lookup read from the table before the table failed it. */
interface SharedRead {
  /** A stored token with min_ttl left, of a version not known to be older, not reported. */
  servable?: Token;
}

/** The lease a taker must name: the one it watched go stale, if any. */
function holderOf(state: LeaseState): LeaseHolder | undefined {
  return state.lease === 'stale' ? state.holder : undefined;
}
