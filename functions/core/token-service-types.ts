import type { Logger } from '@aws-lambda-powertools/logger';
import type { Clock } from './clock.js';
import type { CredentialsSource, ProviderCredentials, Sealer, Token, TokenStore } from './ports.js';
import type { TokenGrant } from './provider-client.js';

/**
 * Mints a token upstream. Every request it sends is answered or given up by
 * `deadlineMs` (the end of the caller's lease, less a margin): see requestToken.
 */
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
  | 'LeaseWaitPolls'
  | 'LeaseTakeovers'
  | 'Degraded'
  | 'UnsealFailures'
  /** An item sealed under another key (after a change of the cache key): re-minted, pages nobody. */
  | 'OtherKeyItems'
  | 'StaleCredentialTokens';

export interface TokenServiceConfig {
  /** Seconds before expiry when one caller refreshes. Default 900. */
  readonly refreshAheadSeconds?: number;
  /** Lease length in ms. Default 10 000. */
  readonly leaseMs?: number;
  /** Longest a caller waits for another instance's refresh. Default leaseMs + 3000. */
  readonly maxWaitMs?: number;
  /**
   * How long a mint is expected to take before any was seen (poll-schedule.ts):
   * waiters then use the duration the minter stored, or this instance's last
   * mint. Default 100.
   */
  readonly expectedMintMs?: number;
  /** The longest delay between two polls of a waiter's back-off. Default 800. */
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
  /** DynamoDB or KMS failed and the token was served without the shared cache. */
  readonly degraded: boolean;
}

export interface VendResult {
  readonly token: Token;
  readonly outcome: VendOutcome;
}

/** An outcome with the given tier and flags, the other flags false. */
export const outcome = (
  tier: VendOutcome['tier'],
  flags: Partial<VendOutcome> = {},
): VendOutcome => ({
  tier,
  refreshed: false,
  waited: false,
  degraded: false,
  ...flags,
});

/** What a refresh did: minted (`refreshed`), found the token not due (`fresh`), or found another caller at it (`busy`). */
export type RefreshResult =
  | { readonly status: 'refreshed' | 'fresh'; readonly expiresAt: number }
  | { readonly status: 'busy' };
