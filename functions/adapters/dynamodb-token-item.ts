/**
 * The token item's attributes in DynamoDB (docs/cache-design.md, "Tiers"):
 * reading an item into the core's shape, and what the lease writes put on
 * it (their TTL) and ask of it (the conditions naming a token or a lease).
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { RefreshFailure, Revision, StoredItem } from '../core/ports.js';
import { MAX_FAILURE_BACKOFF_MS, SEALER_UNAVAILABLE } from '../core/refresh-failure.js';
import { type Item, num, readNum } from './dynamodb-attributes.js';

/**
 * Maps an item to the core's shape; an item with a broken token part has no
 * token, and attributes of the wrong type (a hand edit, an older schema) are
 * read as absent, never as an error.
 */
export function fromItem(item: Item): StoredItem {
  const pk = item.pk?.S ?? '';
  const sealed = item.sealed_token?.B;
  const issuedAt = readNum(item.issued_at);
  const expiresAt = readNum(item.expires_at);
  const credentialsVersion = item.credentials_version?.S;
  const scope = item.scope?.S;
  const providerCreatedAt = readNum(item.provider_created_at);
  const replacesRevoked = item.replaces_revoked?.BOOL === true;
  const mintMs = readNum(item.mint_ms);
  const leaseOwner = item.lease_owner?.S;
  const leaseUntil = readNum(item.lease_until);
  const failure = failureOf(item);
  const lastUsedAt = readNum(item.last_used_at);
  const hasToken =
    sealed !== undefined &&
    issuedAt !== undefined &&
    expiresAt !== undefined &&
    credentialsVersion !== undefined &&
    item.token_type?.S === 'Bearer';
  return {
    pk,
    revision: { expiresAt: expiresAt ?? null, sealed: sealed ?? null },
    ...(hasToken
      ? {
          token: {
            sealed,
            tokenType: 'Bearer' as const,
            issuedAt,
            expiresAt,
            credentialsVersion,
            ...(scope === undefined ? {} : { scope }),
            ...(providerCreatedAt === undefined ? {} : { providerCreatedAt }),
            ...(replacesRevoked ? { replacesRevoked } : {}),
            ...(mintMs === undefined || !Number.isFinite(mintMs) ? {} : { mintMs }),
          },
        }
      : {}),
    ...(leaseOwner === undefined ? {} : { leaseOwner }),
    ...(leaseUntil === undefined ? {} : { leaseUntil }),
    ...(failure === undefined ? {} : { failure }),
    ...(lastUsedAt === undefined ? {} : { lastUsedAt }),
  };
}

/**
 * The last failed refresh the item records. A seal that failed
 * (SEALER_UNAVAILABLE) has its own attribute, `sealer_failed_at`: the release
 * before this one reads any `failed_code` it does not know as a provider
 * outage and answers 503, where this one serves degraded. That release
 * ignores the new attribute and takes the lease over as it always did, so
 * the two can run side by side during a canary.
 *
 * Each write of one kind removes the other (failureUpdate), so the item holds
 * both only when that earlier release wrote `failed_at` after this one wrote
 * `sealer_failed_at`: `failed_at` is then the later, decided by the order of
 * the writes and never by comparing two instances' clocks.
 */
function failureOf(item: Item): RefreshFailure | undefined {
  const failedAt = readNum(item.failed_at);
  if (failedAt !== undefined) {
    const retryAfterSeconds = retryAfterOf(item, failedAt);
    return {
      atMs: failedAt,
      code: item.failed_code?.S ?? 'upstream_unavailable',
      ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
    };
  }
  const sealerFailedAt = readNum(item.sealer_failed_at);
  return sealerFailedAt === undefined
    ? undefined
    : { atMs: sealerFailedAt, code: SEALER_UNAVAILABLE };
}

/**
 * The provider's Retry-After recorded with the failure of `failedAt`:
 * `failed_retry_after` holds it with the `failed_at` it belongs to, so a
 * later failure written by the release before this one (which leaves the
 * attribute alone during a canary) is never read with an older hint.
 */
function retryAfterOf(item: Item, failedAt: number): number | undefined {
  const recorded = item.failed_retry_after?.M;
  if (recorded === undefined || readNum(recorded.at) !== failedAt) return undefined;
  const seconds = readNum(recorded.seconds);
  if (seconds === undefined || !Number.isFinite(seconds) || seconds <= 0) return undefined;
  // Bounded as the back-off it starts is (a hand edit may hold anything).
  return Math.min(seconds, MAX_FAILURE_BACKOFF_MS / 1000);
}

/** How releasing a lease records `failure` (failureOf reads it back), replacing any other record. */
export function failureUpdate(failure: RefreshFailure): {
  readonly set: string;
  readonly remove: readonly string[];
  readonly values: Record<string, AttributeValue>;
} {
  if (failure.code === SEALER_UNAVAILABLE) {
    return {
      set: 'sealer_failed_at = :failed',
      remove: ['failed_at', 'failed_code', 'failed_retry_after'],
      values: { ':failed': num(failure.atMs) },
    };
  }
  const values = { ':failed': num(failure.atMs), ':code': { S: failure.code } };
  if (failure.retryAfterSeconds === undefined) {
    return {
      set: 'failed_at = :failed, failed_code = :code',
      remove: ['sealer_failed_at', 'failed_retry_after'],
      values,
    };
  }
  return {
    set: 'failed_at = :failed, failed_code = :code, failed_retry_after = :retryAfter',
    remove: ['sealer_failed_at'],
    values: {
      ...values,
      ':retryAfter': {
        M: { at: num(failure.atMs), seconds: num(failure.retryAfterSeconds) },
      },
    },
  };
}

/** Every attribute a failure is recorded in: a stored token clears them. */
export const FAILURE_ATTRIBUTES = [
  'failed_at',
  'failed_code',
  'failed_retry_after',
  'sealer_failed_at',
] as const;

/** A lease-only item (no token yet) is kept at most a day. */
const LEASE_ONLY_TTL_SECONDS = 86_400;

/**
 * The TTL written with a lease: the live token's own `expires_at - 60`, else a
 * day ahead, so DynamoDB never sweeps an item (holding a past TTL) mid-refresh.
 */
export function leaseTtl(nowMs: number, seenExpiresAt: number | null | undefined): number {
  const now = Math.floor(nowMs / 1000);
  if (typeof seenExpiresAt === 'number' && seenExpiresAt - 60 > now) return seenExpiresAt - 60;
  return now + LEASE_ONLY_TTL_SECONDS;
}

/**
 * The condition that the item still holds the token of `seen`: the same
 * `expires_at` and the same sealed bytes (tokens minted in the same second
 * share an `expires_at`; no two seals share their bytes). Attributes the
 * core read as absent (missing, or of another type) must still be absent.
 */
export function sameRevision(seen: Revision, values: Item): string {
  // DynamoDB refuses a value the expression does not use: each is set with its use.
  const parts: string[] = [];
  if (seen.expiresAt === null) {
    parts.push('(attribute_not_exists(expires_at) OR NOT attribute_type(expires_at, :n))');
    values[':n'] = { S: 'N' };
  } else {
    parts.push('expires_at = :seenExpires');
    values[':seenExpires'] = num(seen.expiresAt);
  }
  if (seen.sealed === null) {
    parts.push('(attribute_not_exists(sealed_token) OR NOT attribute_type(sealed_token, :b))');
    values[':b'] = { S: 'B' };
  } else {
    parts.push('sealed_token = :seenSealed');
    values[':seenSealed'] = { B: seen.sealed };
  }
  return parts.join(' AND ');
}

/** The condition that `:owner` holds the lease (given an end, that very lease, `:leaseUntil`). */
export function theLease(leaseUntil: number | undefined): string {
  return leaseUntil === undefined
    ? 'lease_owner = :owner'
    : 'lease_owner = :owner AND lease_until = :leaseUntil';
}
