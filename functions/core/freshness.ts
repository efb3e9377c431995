/**
 * When a cached token may be served and when it should be refreshed: pure
 * functions of a token's times, the caller's `min_ttl`, now and the
 * refresh-ahead window. The token service applies them; it holds no rule of
 * its own. Times are epoch seconds.
 */

/** The times of a token that the rules read. */
export interface TokenTimes {
  readonly issuedAt: number;
  readonly expiresAt: number;
}

/**
 * How close to its full lifetime a token must be to count as the best there
 * is when the provider issues tokens that live hardly longer than min_ttl.
 */
export const SHORT_LIFETIME_MARGIN_SECONDS = 60;

/** The lifetime the provider gave the token. */
export const lifetime = (token: TokenTimes): number => token.expiresAt - token.issuedAt;

/** Whole seconds left at `now` (negative once expired). */
export const secondsLeft = (token: TokenTimes, now: number): number => token.expiresAt - now;

/**
 * The min_ttl a token is held to: the caller's, capped at its lifetime minus
 * a minute, so a provider issuing short-lived tokens causes no mint storm
 * (with 7200 s tokens and min_ttl at most 3600 the cap changes nothing).
 */
export function effectiveMinTtl(token: TokenTimes, minTtl: number): number {
  return Math.min(minTtl, Math.max(0, lifetime(token) - SHORT_LIFETIME_MARGIN_SECONDS));
}

/** Has more than the (capped) min_ttl left: may be handed to this caller. */
export function isServable(token: TokenTimes, minTtl: number, now: number): boolean {
  return secondsLeft(token, now) > effectiveMinTtl(token, minTtl);
}

/** The refresh-ahead window of a token: the configured one, at most half its lifetime. */
export function refreshWindow(token: TokenTimes, refreshAheadSeconds: number): number {
  return Math.min(refreshAheadSeconds, lifetime(token) / 2);
}

/** Servable and outside the refresh-ahead window: nobody needs to refresh it yet. */
export function isFresh(
  token: TokenTimes,
  minTtl: number,
  now: number,
  refreshAheadSeconds: number,
): boolean {
  return (
    isServable(token, minTtl, now) &&
    secondsLeft(token, now) > refreshWindow(token, refreshAheadSeconds)
  );
}
