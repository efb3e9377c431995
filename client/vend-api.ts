/**
 * The vend API's vocabulary as callers see it (docs/vend-api.md), kept here so
 * that the client depends on nothing outside `client/`. The vend function has
 * its own definitions (functions/core); test/unit/client-vocabulary.test.ts
 * checks that the two agree.
 */

/** The `code` of the vend API's problem+json answers. */
export const PROBLEM_CODES = [
  'invalid_request',
  'unauthenticated',
  'access_denied',
  'not_found',
  'method_not_allowed',
  'upstream_credentials_rejected',
  'upstream_error',
  'upstream_unavailable',
  'internal_error',
] as const;

export type ProblemCode = (typeof PROBLEM_CODES)[number];

/** The syntax of a scope (a business application id). */
export const SCOPE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/**
 * The syntax of an `access_token` the vend API serves: RFC 6750's `b64token`,
 * all a bearer token may contain, so it is safe in an Authorization header,
 * an environment variable or a log's neighbourhood. The vend function refuses
 * any other from the provider (functions/core/provider-client.ts).
 */
export const ACCESS_TOKEN_PATTERN = /^[A-Za-z0-9\-._~+/]+=*$/;

/** The longest `access_token` the vend API serves, in characters. */
export const MAX_ACCESS_TOKEN_LENGTH = 8192;

/** The largest `min_ttl` the vend API accepts, in seconds. */
export const MAX_MIN_TTL = 3600;

/**
 * A `min_ttl` as the vend API reads it: decimal digits, leading zeros or not
 * (`0300` is 300), 0..MAX_MIN_TTL. Undefined when it is not one.
 */
export function minTtlValue(text: string): number | undefined {
  if (!/^\d+$/.test(text)) return undefined;
  const value = Number(text);
  return value <= MAX_MIN_TTL ? value : undefined;
}
