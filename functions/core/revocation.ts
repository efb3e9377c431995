import { fingerprint } from './fingerprint.js';
import type { Token } from './ports.js';

/**
 * A token that was itself minted to replace a reported one is replaced again
 * on a report only once this instance has known it this long, so a caller
 * that loops (token, a provider 401 for another reason, report, new token...)
 * makes at most one mint a minute per scope, however many instances it reaches.
 */
export const REVOCATION_MIN_AGE_SECONDS = 60;

/**
 * Replacements remembered per scope. Reports replace a scope at most once a
 * minute, so the last few cover every token still served; one forgotten and
 * seen again is only damped anew (longer, never shorter).
 */
const REMEMBERED_PER_KEY = 4;

/**
 * The damping of `revoked=` reports (docs/cache-design.md, "Revocation"),
 * judged by this instance's clock alone. A replacement's age is how long this
 * instance has known it: from its first sight here (its own mint, a read of
 * the item, or the report itself), never its `issued_at`, which is a time on
 * the minter's clock. That age never exceeds the true one, so clocks that
 * disagree cannot shorten the minute; the price is that an instance that has
 * just met a replacement (a cold one) damps reports of it for a minute from then.
 */
export class RevocationDamping {
  readonly #minAgeMs: number;
  /** Per item key: fingerprint of each replacement known, to when it was first seen (ms, this clock). */
  readonly #known = new Map<string, Map<string, number>>();

  constructor(minAgeSeconds = REVOCATION_MIN_AGE_SECONDS) {
    this.#minAgeMs = minAgeSeconds * 1000;
  }

  /** Notes that this instance knows `token` (of item `key`) at `atMs`, its own clock. */
  note(key: string, token: Token | undefined, atMs: number): void {
    if (token?.replacesRevoked !== true) return;
    this.#firstSight(key, fingerprint(token.accessToken), atMs);
  }

  /**
   * `token` is the one a caller reported (`revoked`, its fingerprint) and the
   * report may replace it: it is not a replacement, or this instance has known
   * it for a minute by its own clock (`nowMs`). A replacement not seen before
   * is known from now.
   */
  isRevoked(key: string, token: Token, revoked: string | undefined, nowMs: number): boolean {
    if (revoked === undefined || fingerprint(token.accessToken) !== revoked) return false;
    if (token.replacesRevoked !== true) return true;
    return nowMs - this.#firstSight(key, revoked, nowMs) >= this.#minAgeMs;
  }

  /** When this instance first saw the token `print` of `key`, noting `atMs` if it had not. */
  #firstSight(key: string, print: string, atMs: number): number {
    let known = this.#known.get(key);
    if (!known) {
      known = new Map();
      this.#known.set(key, known);
    }
    const since = known.get(print);
    if (since !== undefined) return since;
    known.set(print, atMs);
    if (known.size > REMEMBERED_PER_KEY) {
      const oldest = known.keys().next().value;
      if (oldest !== undefined) known.delete(oldest);
    }
    return atMs;
  }
}
