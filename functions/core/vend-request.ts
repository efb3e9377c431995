import * as v from 'valibot';
import { SCOPE_PATTERN } from './access-policy.js';
import { InvalidRequestError } from './errors.js';

export const DEFAULT_MIN_TTL = 300;
export const MAX_MIN_TTL = 3600;

export interface VendRequest {
  /** Undefined for the unscoped (partner) token. */
  readonly scope?: string;
  readonly minTtl: number;
}

const QuerySchema = v.strictObject({
  scope: v.optional(
    v.pipe(
      v.string(),
      v.regex(SCOPE_PATTERN, 'scope must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$'),
    ),
  ),
  min_ttl: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^\d{1,4}$/, `min_ttl must be an integer from 0 to ${MAX_MIN_TTL}`),
      v.transform(Number),
      v.maxValue(MAX_MIN_TTL, `min_ttl must be an integer from 0 to ${MAX_MIN_TTL}`),
    ),
    String(DEFAULT_MIN_TTL),
  ),
});

/**
 * Parses the raw query string of `GET /token`. The raw string is used, not the
 * event's comma-joined `queryStringParameters`, so repeated parameters are seen.
 */
export function parseVendRequest(rawQueryString: string): VendRequest {
  const params = new URLSearchParams(rawQueryString);
  // No prototype: a `__proto__` parameter must become a key (and be rejected), not vanish.
  const query: Record<string, string> = Object.create(null);
  for (const [name, value] of params) {
    if (Object.hasOwn(query, name)) {
      throw new InvalidRequestError(`Parameter ${safeName(name)} is repeated.`);
    }
    query[name] = value;
  }
  const result = v.safeParse(QuerySchema, query);
  if (!result.success) {
    const issue = result.issues[0];
    const key = issue ? v.getDotPath(issue) : undefined;
    if (issue?.kind === 'schema' && issue.type === 'strict_object' && key) {
      throw new InvalidRequestError(`Unknown parameter ${safeName(key)}; use scope and min_ttl.`);
    }
    throw new InvalidRequestError(issue?.message ?? 'Invalid query.');
  }
  const { scope, min_ttl: minTtl } = result.output;
  return scope === undefined ? { minTtl } : { scope, minTtl };
}

/** Echoes a caller-chosen name only when it is short and plain. */
function safeName(name: string): string {
  return /^[A-Za-z0-9_.-]{1,32}$/.test(name) ? `"${name}"` : '(unprintable name)';
}
