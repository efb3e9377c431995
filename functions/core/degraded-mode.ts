import { epochSeconds } from './clock.js';
import { describe } from './describe-error.js';
import { credentialsUnavailable } from './errors.js';
import { isServable } from './freshness.js';
import type { MemoryTokenCache } from './memory-cache.js';
import { mintToken } from './mint-token.js';
import type { ProviderCredentials, RefreshFailure, Token } from './ports.js';
import { afterRecordedFailure, backingOff, failureOf } from './refresh-failure.js';
import type { RevocationDamping } from './revocation.js';
import { outcome, type TokenServiceDeps, type VendResult } from './token-service-types.js';

/**
 * Service while DynamoDB or KMS fails (docs/cache-design.md): from this instance's L1 when
 * it holds a servable token, else straight from the provider. Without the
 * shared failure record, each instance backs off on its own after a failure,
 * and damps `revoked=` reports on its own (one replacement a minute).
 */
export class DegradedMode {
  readonly #deps: TokenServiceDeps;
  readonly #l1: MemoryTokenCache;
  readonly #damping: RevocationDamping;
  readonly #leaseMs: number;
  readonly #backoffMs: number;
  readonly #failures = new Map<string, RefreshFailure>();

  constructor(
    deps: TokenServiceDeps,
    l1: MemoryTokenCache,
    damping: RevocationDamping,
    timing: { readonly leaseMs: number; readonly failureBackoffMs: number },
  ) {
    this.#deps = deps;
    this.#l1 = l1;
    this.#damping = damping;
    this.#leaseMs = timing.leaseMs;
    this.#backoffMs = timing.failureBackoffMs;
  }

  async serve(
    key: string,
    scope: string | undefined,
    minTtl: number,
    credentials: ProviderCredentials | undefined,
    revoked: string | undefined,
    fallback?: Token,
  ): Promise<VendResult> {
    const now = epochSeconds(this.#deps.clock);
    const cached = this.#l1.get(key, now);
    if (
      cached &&
      !this.#damping.isRevoked(key, cached, revoked, this.#deps.clock.now()) &&
      (credentials === undefined || cached.credentialsVersion === credentials.version) &&
      isServable(cached, minTtl, now)
    ) {
      return { token: cached, outcome: outcome('l1', { degraded: true }) };
    }
    // A token the table gave before it failed this lookup: served when no
    // new one can be had, as a failed refresh under the lease serves it;
    // without one, `error` is the answer.
    const fallbackOr = (error: unknown): VendResult => {
      if (fallback && isServable(fallback, minTtl, epochSeconds(this.#deps.clock))) {
        return { token: fallback, outcome: outcome('l2', { degraded: true }) };
      }
      throw error;
    };
    if (!credentials) return fallbackOr(credentialsUnavailable());
    const nowMs = this.#deps.clock.now();
    const backOff = backingOff(this.#failures.get(key), nowMs, this.#backoffMs);
    if (backOff) return fallbackOr(backOff);
    let token: Token;
    try {
      const minted = await mintToken(this.#deps, scope, credentials, nowMs + this.#leaseMs);
      // With a report, mark the new token as a replacement, known from now, so
      // the one-minute rule of revocation.ts damps the next reports on this
      // instance as it does with the table. Without the table this instance
      // cannot tell whether the report named the token others hold, so any
      // report that leads to a mint counts: it errs toward fewer mints.
      token = revoked === undefined ? minted : { ...minted, replacesRevoked: true };
      this.#damping.note(key, token, this.#deps.clock.now());
    } catch (error) {
      this.#failures.set(key, failureOf(error, this.#deps.clock.now()));
      const served = fallbackOr(afterRecordedFailure(error, this.#backoffMs));
      this.#deps.logger.warn('refresh failed; serving the current token', {
        scope: scope ?? 'unscoped',
        error: describe(error),
      });
      return served;
    }
    this.#failures.delete(key);
    this.#l1.set(key, token, epochSeconds(this.#deps.clock));
    return { token, outcome: outcome('provider', { degraded: true }) };
  }
}
