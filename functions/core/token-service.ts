import type { Logger } from '@aws-lambda-powertools/logger';
import { type Clock, epochSeconds } from './clock.js';
import {
  InternalError,
  StoreUnavailableError,
  UpstreamCredentialsRejectedError,
  UpstreamError,
  UpstreamUnavailableError,
  VendError,
} from './errors.js';
import { MemoryTokenCache, SingleFlight } from './memory-cache.js';
import type {
  CredentialsSource,
  ProviderCredentials,
  RefreshFailure,
  Sealer,
  StoredItem,
  Token,
  TokenStore,
} from './ports.js';
import type { TokenGrant } from './provider-client.js';

/** A forced secret re-read on a version mismatch happens at most this often. */
const VERSION_RECHECK_MS = 30_000;
/** See #servable: how close to its full lifetime a short-lived token must be. */
const SHORT_LIFETIME_MARGIN_SECONDS = 60;

/** The error for callers arriving while a recent failed refresh backs off. */
function recentFailure(code: string | undefined, retryAfter: number): VendError {
  switch (code) {
    case 'upstream_credentials_rejected':
      return new UpstreamCredentialsRejectedError(
        'The provider rejected our key and secret moments ago.',
      );
    case 'upstream_error':
      return new UpstreamError('The provider answered unexpectedly moments ago.');
    case 'internal_error':
      return new InternalError();
    default:
      return new UpstreamUnavailableError(
        'The provider failed moments ago; try again shortly.',
        retryAfter,
      );
  }
}

/** Item key of a scope's token; `~` cannot start a scope, so the keys never collide. */
export const tokenKey = (scope: string | undefined): string =>
  scope === undefined ? 'TOKEN#~unscoped' : `TOKEN#${scope}`;

/** Mints a token upstream; `deadlineMs` bounds retries. */
export type Minter = (
  credentials: ProviderCredentials,
  scope: string | undefined,
  deadlineMs: number,
) => Promise<TokenGrant>;

/** What the core needs to log: a subset of the Powertools Logger. */
export type CoreLogger = Pick<Logger, 'info' | 'warn' | 'error'>;

/** Counters the core reports (a Powertools Metrics adapter sits behind it). */
export type CoreMetric =
  | 'UpstreamRequests'
  | 'UpstreamErrors'
  | 'LeaseWaits'
  | 'LeaseTakeovers'
  | 'Degraded'
  | 'UnsealFailures'
  | 'StaleCredentialTokens';

export interface TokenServiceConfig {
  /** Seconds before expiry when one caller refreshes. Default 900. */
  readonly refreshAheadSeconds?: number;
  /** Lease length in ms. Default 10 000. */
  readonly leaseMs?: number;
  /** Longest a caller waits for another instance's refresh. Default leaseMs + 3000. */
  readonly maxWaitMs?: number;
  /** First poll delay while waiting; doubles up to pollMaxMs. Defaults 50 and 800. */
  readonly pollInitialMs?: number;
  readonly pollMaxMs?: number;
  /** After a failed refresh, no new attempt for this long. Default 5000. */
  readonly failureBackoffMs?: number;
  /** L1 entry lifetime in seconds. Default 60. */
  readonly l1MaxAgeSeconds?: number;
}

export interface TokenServiceDeps {
  readonly store: TokenStore;
  readonly sealer: Sealer;
  readonly credentials: CredentialsSource;
  readonly mint: Minter;
  readonly clock: Clock;
  readonly random: () => number;
  readonly logger: CoreLogger;
  readonly count?: (metric: CoreMetric) => void;
  /** Identifies this instance as a lease owner. */
  readonly instanceId: string;
}

/** How a vend was served, for the audit line and metrics. */
export interface VendOutcome {
  /** Where the token came from: this instance's memory, DynamoDB, or the provider. */
  readonly tier: 'l1' | 'l2' | 'provider';
  /** A new token replaced an existing one (refresh-ahead, rotation, min_ttl). */
  readonly refreshed: boolean;
  /** This caller waited for another instance's refresh. */
  readonly waited: boolean;
  /** DynamoDB failed and the token was served without it. */
  readonly degraded: boolean;
}

export interface VendResult {
  readonly token: Token;
  readonly outcome: VendOutcome;
}

const outcome = (tier: VendOutcome['tier'], flags: Partial<VendOutcome> = {}): VendOutcome => ({
  tier,
  refreshed: false,
  waited: false,
  degraded: false,
  ...flags,
});

/**
 * The two-tier token cache of SPEC section 5: L1 in memory, L2 in DynamoDB,
 * a conditional-write lease so one caller across all instances refreshes,
 * refresh-ahead, and degraded service when DynamoDB fails.
 */
export class TokenService {
  readonly #deps: TokenServiceDeps;
  readonly #l1: MemoryTokenCache;
  readonly #flights = new SingleFlight<VendResult>();
  readonly #refreshAhead: number;
  readonly #leaseMs: number;
  readonly #maxWaitMs: number;
  readonly #pollInitialMs: number;
  readonly #pollMaxMs: number;
  readonly #failureBackoffMs: number;
  readonly #degradedFailures = new Map<string, RefreshFailure>();
  #lastForcedReadMs = Number.NEGATIVE_INFINITY;

  constructor(deps: TokenServiceDeps, config: TokenServiceConfig = {}) {
    this.#deps = deps;
    this.#l1 = new MemoryTokenCache(config.l1MaxAgeSeconds);
    this.#refreshAhead = config.refreshAheadSeconds ?? 900;
    this.#leaseMs = config.leaseMs ?? 10_000;
    this.#maxWaitMs = config.maxWaitMs ?? this.#leaseMs + 3000;
    this.#pollInitialMs = config.pollInitialMs ?? 50;
    this.#pollMaxMs = config.pollMaxMs ?? 800;
    this.#failureBackoffMs = config.failureBackoffMs ?? 5000;
  }

  /** A token for `scope` (undefined: unscoped) with more than `minTtl` seconds left. */
  async getToken(scope: string | undefined, minTtl: number): Promise<VendResult> {
    const key = tokenKey(scope);
    const credentials = await this.#deps.credentials.get();
    const cached = this.#l1.get(key, this.#now());
    if (cached && this.#fresh(cached, minTtl, credentials)) {
      return { token: cached, outcome: outcome('l1') };
    }
    return this.#flights.run(`${key}|${minTtl}`, () =>
      this.#fromStore(key, scope, minTtl, credentials),
    );
  }

  /** Mints a new token now under the lease, whatever the cache holds (operator refresh). */
  async refresh(scope: string | undefined): Promise<VendResult> {
    const key = tokenKey(scope);
    const credentials = await this.#deps.credentials.get();
    if (!(await this.#tryLease(key, this.#deps.clock.now()))) {
      throw new UpstreamUnavailableError('Another refresh of this scope is in progress.', 1);
    }
    return this.#mintUnderLease(key, scope, credentials, undefined, 0);
  }

  /** Forgets this instance's L1 entries (tests, operator invalidation). */
  forget(scope?: string): void {
    if (scope === undefined) this.#l1.clear();
    else this.#l1.delete(tokenKey(scope));
  }

  /** Any StoreUnavailableError on the shared path turns into degraded service. */
  async #fromStore(
    key: string,
    scope: string | undefined,
    minTtl: number,
    credentials: ProviderCredentials,
  ): Promise<VendResult> {
    try {
      return await this.#fromShared(key, scope, minTtl, credentials);
    } catch (error) {
      if (error instanceof StoreUnavailableError) {
        return this.#degraded(key, scope, minTtl, credentials, error);
      }
      throw error;
    }
  }

  async #fromShared(
    key: string,
    scope: string | undefined,
    minTtl: number,
    known: ProviderCredentials,
  ): Promise<VendResult> {
    const item = await this.#deps.store.get(key);
    const credentials = await this.#recheckVersion(item, known);
    const current = await this.#open(item, credentials);
    if (current && this.#fresh(current, minTtl, credentials)) {
      this.#l1.set(key, current, this.#now());
      return { token: current, outcome: outcome('l2') };
    }
    const servable = current && this.#servable(current, minTtl) ? current : undefined;
    const nowMs = this.#deps.clock.now();
    const backingOff = this.#backingOff(item?.failure, nowMs);
    if (backingOff) {
      // A refresh failed moments ago: keep serving what we have, or fail fast alike.
      if (servable) return { token: servable, outcome: outcome('l2') };
      throw backingOff;
    }
    if (await this.#tryLease(key, nowMs, item?.token?.expiresAt ?? null)) {
      return this.#mintUnderLease(key, scope, credentials, servable, minTtl);
    }
    // Another caller refreshes: everyone else keeps receiving the current token.
    if (servable) return { token: servable, outcome: outcome('l2') };
    return this.#waitForRefresh(key, scope, minTtl, credentials);
  }

  async #mintUnderLease(
    key: string,
    scope: string | undefined,
    credentials: ProviderCredentials,
    servable: Token | undefined,
    minTtl: number,
    flags: Partial<VendOutcome> = {},
  ): Promise<VendResult> {
    const owner = this.#deps.instanceId;
    let token: Token;
    try {
      token = await this.#mint(
        key,
        scope,
        credentials,
        this.#deps.clock.now() + this.#leaseMs - 500,
      );
    } catch (error) {
      await this.#release(key, this.#failureOf(error));
      if (servable && this.#servable(servable, minTtl)) {
        this.#deps.logger.warn('refresh failed; serving the current token', {
          scope: scope ?? 'unscoped',
          error: describe(error),
        });
        return { token: servable, outcome: outcome('l2', flags) };
      }
      throw error;
    }
    let degraded = flags.degraded ?? false;
    try {
      const sealed = await this.#deps.sealer.seal(token.accessToken, key);
      const { accessToken: _, ...meta } = token;
      const stored = await this.#deps.store.putToken(key, { ...meta, sealed }, owner);
      if (!stored) {
        this.#deps.logger.warn('lease was taken over before the new token was stored', {
          scope: scope ?? 'unscoped',
        });
      }
    } catch (error) {
      // Sealing or storing failed: serve the token, and free the lease for others.
      this.#storeFailed('store token', error);
      degraded = true;
      await this.#release(key);
    }
    this.#l1.set(key, token, this.#now());
    return {
      token,
      outcome: outcome('provider', {
        ...flags,
        degraded,
        refreshed: servable !== undefined || flags.refreshed === true,
      }),
    };
  }

  async #waitForRefresh(
    key: string,
    scope: string | undefined,
    minTtl: number,
    credentials: ProviderCredentials,
  ): Promise<VendResult> {
    const { clock } = this.#deps;
    const startedMs = clock.now();
    const deadline = startedMs + this.#maxWaitMs;
    let delay = this.#pollInitialMs;
    this.#deps.count?.('LeaseWaits');
    while (clock.now() < deadline) {
      await clock.sleep(
        Math.min(delay + Math.floor(this.#deps.random() * delay), deadline - clock.now()),
      );
      delay = Math.min(delay * 2, this.#pollMaxMs);
      const item = await this.#deps.store.get(key);
      const current = await this.#open(item, credentials);
      if (current && this.#servable(current, minTtl)) {
        this.#l1.set(key, current, this.#now());
        return { token: current, outcome: outcome('l2', { waited: true }) };
      }
      const nowMs = clock.now();
      if (item?.failure && item.failure.atMs >= startedMs) {
        throw recentFailure(item.failure.code, Math.ceil(this.#failureBackoffMs / 1000));
      }
      if (item?.leaseUntil === undefined || item.leaseUntil < nowMs) {
        // The holder died or gave up: take over (unless a token just appeared).
        if (await this.#tryLease(key, nowMs, item?.token?.expiresAt ?? null)) {
          this.#deps.count?.('LeaseTakeovers');
          this.#deps.logger.warn('took over an expired lease', { scope: scope ?? 'unscoped' });
          return this.#mintUnderLease(key, scope, credentials, undefined, minTtl, { waited: true });
        }
      }
    }
    throw new UpstreamUnavailableError(
      'Timed out waiting for another instance to refresh the token.',
      2,
    );
  }

  /**
   * Takes this instance's lease on `key` if it is free or ran out and, given
   * `seenExpiresAt`, only while the stored token is still the one read.
   */
  #tryLease(key: string, nowMs: number, seenExpiresAt?: number | null): Promise<boolean> {
    return this.#deps.store.tryAcquireLease(
      key,
      this.#deps.instanceId,
      nowMs,
      nowMs + this.#leaseMs,
      seenExpiresAt,
    );
  }

  /** A failed refresh as recorded: now, and the SPEC code of its error. */
  #failureOf(error: unknown): RefreshFailure {
    return {
      atMs: this.#deps.clock.now(),
      code: error instanceof VendError ? error.code : 'internal_error',
    };
  }

  /** The error to answer with while a recent failure backs off, else undefined. */
  #backingOff(failure: RefreshFailure | undefined, nowMs: number): VendError | undefined {
    if (!failure || nowMs - failure.atMs >= this.#failureBackoffMs) return undefined;
    return recentFailure(
      failure.code,
      Math.ceil((this.#failureBackoffMs - (nowMs - failure.atMs)) / 1000),
    );
  }

  /** Gives the lease up; a store failure here only delays others until the lease runs out. */
  async #release(key: string, failure?: RefreshFailure): Promise<void> {
    try {
      await this.#deps.store.releaseLease(key, this.#deps.instanceId, failure);
    } catch (error) {
      this.#storeFailed('release lease', error);
    }
  }

  /**
   * A stored token minted under another secret version may mean this instance's
   * cached secret is the old one: re-read it (at most every 30 s) before
   * judging the token stale, so instances on two versions do not re-mint each
   * other's tokens.
   */
  async #recheckVersion(
    item: StoredItem | undefined,
    credentials: ProviderCredentials,
  ): Promise<ProviderCredentials> {
    const stored = item?.token?.credentialsVersion;
    if (stored === undefined || stored === credentials.version) return credentials;
    const nowMs = this.#deps.clock.now();
    if (nowMs - this.#lastForcedReadMs < VERSION_RECHECK_MS) return credentials;
    this.#lastForcedReadMs = nowMs;
    return this.#deps.credentials.get({ forceRefresh: true });
  }

  /** Serves without DynamoDB: from L1 if it has a servable token, else straight from the provider. */
  async #degraded(
    key: string,
    scope: string | undefined,
    minTtl: number,
    credentials: ProviderCredentials,
    error: unknown,
  ): Promise<VendResult> {
    this.#storeFailed('read', error);
    const cached = this.#l1.get(key, this.#now());
    if (
      cached &&
      cached.credentialsVersion === credentials.version &&
      this.#servable(cached, minTtl)
    ) {
      return { token: cached, outcome: outcome('l1', { degraded: true }) };
    }
    // Without the shared failure record, back off per instance instead.
    const nowMs = this.#deps.clock.now();
    const backingOff = this.#backingOff(this.#degradedFailures.get(key), nowMs);
    if (backingOff) throw backingOff;
    let token: Token;
    try {
      token = await this.#mint(key, scope, credentials, nowMs + this.#leaseMs);
    } catch (mintError) {
      this.#degradedFailures.set(key, this.#failureOf(mintError));
      throw mintError;
    }
    this.#degradedFailures.delete(key);
    this.#l1.set(key, token, this.#now());
    return { token, outcome: outcome('provider', { degraded: true }) };
  }

  /** Calls the provider; after a 401/403 re-reads the secret once and retries if it changed. */
  async #mint(
    key: string,
    scope: string | undefined,
    credentials: ProviderCredentials,
    deadlineMs: number,
  ): Promise<Token> {
    const attempt = async (creds: ProviderCredentials): Promise<Token> => {
      const issuedAt = this.#now();
      this.#deps.count?.('UpstreamRequests');
      try {
        const grant = await this.#deps.mint(creds, scope, deadlineMs);
        return {
          accessToken: grant.accessToken,
          tokenType: 'Bearer',
          ...(scope === undefined ? {} : { scope }),
          issuedAt,
          expiresAt: issuedAt + grant.expiresIn,
          ...(grant.createdAt === undefined ? {} : { providerCreatedAt: grant.createdAt }),
          credentialsVersion: creds.version,
        };
      } catch (error) {
        this.#deps.count?.('UpstreamErrors');
        throw error;
      }
    };
    try {
      return await attempt(credentials);
    } catch (error) {
      if (!(error instanceof UpstreamCredentialsRejectedError)) throw error;
      const reread = await this.#deps.credentials.get({ forceRefresh: true });
      if (
        reread.version === credentials.version &&
        reread.key === credentials.key &&
        reread.secret === credentials.secret
      ) {
        throw error;
      }
      this.#deps.logger.info(
        'provider rejected the credentials; retrying with the re-read secret',
        {
          key,
          credentialsVersion: reread.version,
        },
      );
      return attempt(reread);
    }
  }

  /** Unseals a stored token; anything unusable is a miss, never an error to the caller. */
  async #open(
    item: StoredItem | undefined,
    credentials: ProviderCredentials,
  ): Promise<Token | undefined> {
    const stored = item?.token;
    if (!item || !stored) return undefined;
    if (stored.expiresAt <= this.#now()) return undefined;
    if (stored.credentialsVersion !== credentials.version) {
      this.#deps.count?.('StaleCredentialTokens');
      return undefined;
    }
    try {
      const accessToken = await this.#deps.sealer.unseal(stored.sealed, item.pk);
      const { sealed: _, ...meta } = stored;
      return { ...meta, accessToken };
    } catch (error) {
      this.#deps.count?.('UnsealFailures');
      this.#deps.logger.warn('cached token could not be unsealed; re-minting', {
        key: item.pk,
        error: describe(error),
      });
      return undefined;
    }
  }

  #storeFailed(operation: string, error: unknown): void {
    this.#deps.count?.('Degraded');
    this.#deps.logger.warn('token store unavailable; serving degraded', {
      operation,
      error: describe(error),
    });
  }

  #now(): number {
    return epochSeconds(this.#deps.clock);
  }

  /** Lifetime-relative bounds, so a provider issuing short-lived tokens does not cause a mint storm. */
  #lifetime(token: Token): number {
    return token.expiresAt - token.issuedAt;
  }

  /**
   * Has more than min_ttl left. When the provider issues tokens that live
   * hardly longer than min_ttl, a token within a minute of its full lifetime
   * is the best there is, so min_ttl is capped at lifetime - 60.
   */
  #servable(token: Token, minTtl: number): boolean {
    const cap = Math.max(0, this.#lifetime(token) - SHORT_LIFETIME_MARGIN_SECONDS);
    return token.expiresAt - this.#now() > Math.min(minTtl, cap);
  }

  /** Servable, minted with the current secret and outside the refresh-ahead window. */
  #fresh(token: Token, minTtl: number, credentials: ProviderCredentials): boolean {
    const window = Math.min(this.#refreshAhead, this.#lifetime(token) / 2);
    return (
      token.credentialsVersion === credentials.version &&
      this.#servable(token, minTtl) &&
      token.expiresAt - this.#now() > window
    );
  }
}

/** An error's name and code for logs; never its message, which could quote a response. */
function describe(error: unknown): Record<string, unknown> {
  if (error instanceof StoreUnavailableError) return { name: error.name, message: error.message };
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return { name: error.name, ...(typeof code === 'string' ? { code } : {}) };
  }
  return { name: typeof error };
}
