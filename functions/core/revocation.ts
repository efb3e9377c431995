import { fingerprint } from './fingerprint.js';
import type { Token } from './ports.js';

/**
 * A token that was itself minted to replace a reported one is replaced again
 * on a report only once it is this old, so a caller that loops (token, a
 * provider 401 for another reason, report, new token...) makes at most one
 * mint a minute per scope, however many instances it reaches.
 */
export const REVOCATION_MIN_AGE_SECONDS = 60;

/** The token is the one a caller reported as refused, and the report may replace it. */
export function isRevoked(token: Token, revoked: string | undefined, now: number): boolean {
  return (
    revoked !== undefined &&
    fingerprint(token.accessToken) === revoked &&
    (token.replacesRevoked !== true || now - token.issuedAt >= REVOCATION_MIN_AGE_SECONDS)
  );
}
