import { scopeLabel } from '../core/item-keys.js';
import type { LoadedPolicy } from '../core/policy-source.js';
import type { StoredItem } from '../core/ports.js';
import type { KeyJobSummary } from '../issue-keys/ports.js';
import { isInUse } from '../refresh/in-use.js';

/** One cached scope as `status` shows it: times in epoch seconds; never the token. */
export interface TokenStatus {
  readonly scope: string;
  /** `valid`, `expired`, or `unusable` (no complete token part: the next vend replaces it). */
  readonly state: 'valid' | 'expired' | 'unusable';
  readonly issued_at?: number;
  readonly expires_at?: number;
  readonly seconds_left?: number;
  readonly credentials_version?: string;
  readonly lease: { readonly held: boolean; readonly owner?: string; readonly until?: number };
  readonly in_use: boolean;
  readonly last_used_at?: number;
  readonly last_failure?: {
    readonly at: number;
    readonly code: string;
    /** The provider's Retry-After (seconds) every instance backs off for. */
    readonly retry_after?: number;
  };
}

/**
 * One key job as `status` shows it: never key material, nor the
 * Idempotency-Key (the admin reads only the key-jobs index, which holds neither).
 */
export interface KeyJobStatus {
  readonly business_application_id: string;
  readonly state: KeyJobSummary['state'];
  readonly attempts: number;
  readonly issue_count: number;
  readonly last_error?: string;
  readonly last_error_at?: number;
  readonly stored_at?: number;
  readonly secret_name?: string;
  /** A run holds the job (epoch seconds until it runs out). */
  readonly running_until?: number;
  /** The provider's answer is kept sealed, waiting to be stored. */
  readonly awaiting_store: boolean;
}

/** The access policy in force, as `status` shows it. */
export interface PolicyStatus {
  /** AppConfig's version label when the deployed version has one, else `digest`. */
  readonly version: string;
  /** `sha256:` and 12 hex digits of the document, as `tvm policy validate` prints for a file. */
  readonly digest?: string;
  /** When this function loaded it (epoch seconds; absent only for a test's fixed policy). */
  readonly loaded_at?: number;
  readonly scopes: number;
  readonly principals: number;
  readonly key_issuing_ids: number;
}

export interface StatusReport {
  readonly now: number;
  readonly policy: PolicyStatus;
  readonly tokens: TokenStatus[];
  readonly key_jobs: KeyJobStatus[];
}

const defined = <T extends object>(value: T): T =>
  Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;

/**
 * How long past its end, on the holder's clock, `status` still shows a lease
 * as held: as far as two instances' clocks may disagree. A display only; no
 * lease decision compares clocks (functions/core/lease-watch.ts).
 */
const LEASE_SHOWN_HELD_MS = 60_000;

export function tokenStatus(
  item: StoredItem,
  nowMs: number,
  inUseWindowSeconds: number,
): TokenStatus {
  const now = Math.floor(nowMs / 1000);
  const { token } = item;
  // Shown held until its end, on the holder's clock, is past by more than
  // clocks may disagree. A display only: `refresh` takes a lease over once
  // its own instance has watched it unchanged for a lease period (lease-watch.ts).
  const leaseHeld = item.leaseUntil !== undefined && item.leaseUntil >= nowMs - LEASE_SHOWN_HELD_MS;
  return defined({
    scope: scopeLabel(item.pk),
    state: !token ? 'unusable' : token.expiresAt <= now ? 'expired' : 'valid',
    issued_at: token?.issuedAt,
    expires_at: token?.expiresAt,
    seconds_left: token ? Math.max(0, token.expiresAt - now) : undefined,
    credentials_version: token?.credentialsVersion,
    lease: leaseHeld
      ? { held: true, owner: item.leaseOwner, until: Math.floor((item.leaseUntil ?? 0) / 1000) }
      : { held: false },
    in_use: isInUse(item, now, inUseWindowSeconds),
    last_used_at: item.lastUsedAt,
    last_failure: item.failure
      ? {
          at: Math.floor(item.failure.atMs / 1000),
          code: item.failure.code,
          ...(item.failure.retryAfterSeconds === undefined
            ? {}
            : { retry_after: item.failure.retryAfterSeconds }),
        }
      : undefined,
  } as TokenStatus);
}

export function policyStatus(loaded: LoadedPolicy): PolicyStatus {
  return defined({
    version: loaded.version,
    digest: loaded.digest,
    loaded_at: loaded.loadedAt > 0 ? Math.floor(loaded.loadedAt / 1000) : undefined,
    scopes: loaded.policy.scopes.size,
    principals: loaded.policy.principals.length,
    key_issuing_ids: loaded.policy.keyIssuingIds?.length ?? 0,
  } as PolicyStatus);
}

export function keyJobStatus(record: KeyJobSummary, nowMs: number): KeyJobStatus {
  return defined({
    business_application_id: record.businessApplicationId,
    state: record.state,
    attempts: record.attempts,
    issue_count: record.issueCount,
    last_error: record.lastError,
    last_error_at: record.lastErrorAt,
    stored_at: record.storedAt,
    secret_name: record.secretName,
    running_until:
      record.leaseUntilMs !== undefined && record.leaseUntilMs >= nowMs
        ? Math.floor(record.leaseUntilMs / 1000)
        : undefined,
    awaiting_store: record.awaitingStore,
  } as KeyJobStatus);
}
