import type { StoredItem } from '../core/ports.js';

/**
 * Whether a cached scope is in use, so the scheduled refresh keeps it fresh:
 * vended within the in-use window, or vended at all since its current token
 * was minted. The second rule covers callers that cache a token for most of
 * its life (the client library keeps one until min_ttl is left, about 6,900 s
 * of 7,200): they come back only every lifetime, longer than any sensible
 * window, and must still never wait on the provider. A scope nobody asks for
 * any more is refreshed at most once more, then left alone.
 */
export function isInUse(item: StoredItem, now: number, inUseWindowSeconds: number): boolean {
  const { lastUsedAt, token } = item;
  if (lastUsedAt === undefined) return false;
  return (
    now - lastUsedAt <= inUseWindowSeconds || (token !== undefined && lastUsedAt >= token.issuedAt)
  );
}
