/**
 * A `Retry-After` header in whole seconds: delta-seconds, or an HTTP date
 * (RFC 9110, section 10.2.3) counted from `nowMs`; undefined when absent or
 * unreadable. A date must name its day and month: `Date.parse` would also
 * read "-5" or "1.5" as dates. Shared by the token and key-issuing calls.
 */
export function retryAfterSecondsOf(value: string | null, nowMs: number): number | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  if (/^\d+$/.test(text)) return Number(text);
  if (!/[A-Za-z]/.test(text)) return undefined;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - nowMs) / 1000));
}
