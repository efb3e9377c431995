import type { Clock } from './clock.js';
import { CredentialsUnavailableError } from './errors.js';
import type { CredentialsSource, ProviderCredentials } from './ports.js';

/** A forced secret re-read for one version seen in the cache happens at most this often. */
export const VERSION_RECHECK_MS = 30_000;

/**
 * Learns whether a credentials version seen in the cache is the current one,
 * by re-reading the secret. Throttled per version seen (not once for all
 * versions), so a check made for one scope never hides a rotation seen in
 * another, while instances on two versions do not re-read on every vend.
 */
export class VersionCheck {
  readonly #credentials: CredentialsSource;
  readonly #clock: Clock;
  readonly #checks = new Map<string, { atMs: number; read: boolean }>();

  constructor(credentials: CredentialsSource, clock: Clock) {
    this.#credentials = credentials;
    this.#clock = clock;
  }

  /**
   * The current credentials, read fresh because the cache holds a token of
   * version `seen` (or, within 30 s of such a read, the cached ones);
   * undefined when the secret cannot be read, so the caller cannot tell which
   * version is current.
   */
  async currentFor(seen: string): Promise<ProviderCredentials | undefined> {
    const nowMs = this.#clock.now();
    const last = this.#checks.get(seen);
    if (last && nowMs - last.atMs < VERSION_RECHECK_MS) {
      return last.read ? readCachedCredentials(this.#credentials) : undefined;
    }
    for (const [version, check] of this.#checks) {
      if (nowMs - check.atMs >= VERSION_RECHECK_MS) this.#checks.delete(version);
    }
    try {
      const current = await this.#credentials.get({ forceRefresh: true });
      this.#checks.set(seen, { atMs: nowMs, read: true });
      return current;
    } catch (error) {
      if (!(error instanceof CredentialsUnavailableError)) throw error;
      this.#checks.set(seen, { atMs: nowMs, read: false });
      return undefined;
    }
  }
}

/** The cached credentials, or undefined while the secret cannot be read at all. */
export async function readCachedCredentials(
  source: CredentialsSource,
): Promise<ProviderCredentials | undefined> {
  try {
    return await source.get();
  } catch (error) {
    if (error instanceof CredentialsUnavailableError) return undefined;
    throw error;
  }
}
