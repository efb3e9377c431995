import { SCOPE_PATTERN } from './access-policy.js';
import { InvalidRequestError } from './errors.js';

export const DEFAULT_MIN_TTL = 300;
export const MAX_MIN_TTL = 3600;

export interface VendRequest {
  /** Undefined for the unscoped (partner) token. */
  readonly scope?: string;
  readonly minTtl: number;
  /**
   * The fingerprint of a token the provider refused (revoked early): it is
   * replaced, not served, whatever it has left.
   */
  readonly revoked?: string;
}

/** A token fingerprint: the first 16 hex digits of its SHA-256 (fingerprint.ts). */
const FINGERPRINT = /^[0-9a-f]{16}$/;

/**
 * Every `detail` a malformed query can get. Fixed texts in our own words: no
 * library message and nothing the caller sent (not even a parameter name).
 */
const DETAIL = {
  scope: 'scope must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$',
  minTtl: `min_ttl must be an integer from 0 to ${MAX_MIN_TTL}`,
  emptyName: 'A parameter has an empty name; use scope, min_ttl and revoked.',
  revoked: 'revoked must be a token fingerprint: 16 lower-case hex digits',
  unknown: 'Unknown parameter; use scope, min_ttl and revoked.',
  repeated: {
    scope: 'Parameter "scope" is repeated.',
    min_ttl: 'Parameter "min_ttl" is repeated.',
    revoked: 'Parameter "revoked" is repeated.',
  },
} as const;

/**
 * Parses the raw query string of `GET /token`. The raw string is used, not the
 * event's comma-joined `queryStringParameters`, so repeated parameters are seen.
 * The first problem in query order is reported.
 */
export function parseVendRequest(rawQueryString: string): VendRequest {
  let scope: string | undefined;
  let minTtl: number | undefined;
  let revoked: string | undefined;
  for (const [name, value] of new URLSearchParams(rawQueryString)) {
    if (name === '') throw new InvalidRequestError(DETAIL.emptyName);
    if (name !== 'scope' && name !== 'min_ttl' && name !== 'revoked') {
      throw new InvalidRequestError(DETAIL.unknown);
    }
    if ({ scope, min_ttl: minTtl, revoked }[name] !== undefined) {
      throw new InvalidRequestError(DETAIL.repeated[name]);
    }
    if (name === 'revoked') {
      if (!FINGERPRINT.test(value)) throw new InvalidRequestError(DETAIL.revoked);
      revoked = value;
    } else if (name === 'scope') {
      if (!SCOPE_PATTERN.test(value)) throw new InvalidRequestError(DETAIL.scope);
      scope = value;
    } else {
      // Decimal digits read by their value, leading zeros or not (`0300` is 300).
      if (!/^\d+$/.test(value) || Number(value) > MAX_MIN_TTL) {
        throw new InvalidRequestError(DETAIL.minTtl);
      }
      minTtl = Number(value);
    }
  }
  minTtl ??= DEFAULT_MIN_TTL;
  return {
    minTtl,
    ...(scope === undefined ? {} : { scope }),
    ...(revoked === undefined ? {} : { revoked }),
  };
}
