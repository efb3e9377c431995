import { type Clock, epochSeconds } from './clock.js';
import { describe } from './describe-error.js';
import { SealedUnderOtherKeyError, SealerUnavailableError } from './errors.js';
import {
  NO_REVISION,
  type ProviderCredentials,
  type Revision,
  type Sealer,
  type StoredItem,
  type Token,
} from './ports.js';
import type { CoreLogger, CoreMetric } from './token-service-types.js';
import type { VersionCheck } from './version-check.js';

/**
 * What one read of an item offers a caller, after the version check: the
 * single place that decides which stored token may be served and whether it
 * may be replaced.
 */
export interface ItemView {
  /** The credentials to mint with; undefined when the secret cannot be read. */
  readonly credentials?: ProviderCredentials;
  /** The stored token, unsealed, unexpired, and not known to be of an older version. */
  readonly token?: Token;
  /**
   * This caller may mint and overwrite the item: it has credentials, and the
   * stored token is of the same version or verified older by a fresh re-read.
   * False while the secret cannot be read: a token of another version might
   * be newer, and an older one must never overwrite it.
   */
  readonly canReplace: boolean;
  /** The item's revision, for the lease condition. */
  readonly revision: Revision;
}

export interface ItemReaderDeps {
  readonly sealer: Sealer;
  readonly clock: Clock;
  readonly logger: CoreLogger;
  readonly count?: (metric: CoreMetric) => void;
}

/**
 * Reads what a stored item offers a caller: the single place that decides,
 * for every path of the token service, which stored token may be served and
 * whether it may be replaced (version check included).
 */
export class ItemReader {
  readonly #deps: ItemReaderDeps;
  readonly #versions: VersionCheck;

  constructor(deps: ItemReaderDeps, versions: VersionCheck) {
    this.#deps = deps;
    this.#versions = versions;
  }

  /**
   * Reads what an item offers this caller. A token of another credentials
   * version makes the instance re-read the secret (once per version seen per
   * 30 s) before judging it: the same version as the re-read secret is
   * current; another one is older and is neither served nor kept. Without a
   * readable secret the token can be served but not replaced.
   */
  async view(
    item: StoredItem | undefined,
    known: ProviderCredentials | undefined,
  ): Promise<ItemView> {
    const revision = item?.revision ?? NO_REVISION;
    const stored = item?.token;
    if (!item || !stored) {
      return {
        revision,
        ...(known ? { credentials: known } : {}),
        canReplace: known !== undefined,
      };
    }
    // An expired token is never served, but its version still decides who may
    // replace it: an instance on an older secret must not write over it.
    const live = async () =>
      stored.expiresAt > epochSeconds(this.#deps.clock) ? this.#unseal(item) : {};
    if (!known) return { revision, ...(await live()), canReplace: false };
    if (stored.credentialsVersion === known.version) {
      return { revision, credentials: known, ...(await live()), canReplace: true };
    }
    const current = await this.#versions.currentFor(stored.credentialsVersion);
    if (!current) return { revision, credentials: known, ...(await live()), canReplace: false };
    if (current.version === stored.credentialsVersion) {
      return { revision, credentials: current, ...(await live()), canReplace: true };
    }
    this.#deps.count?.('StaleCredentialTokens');
    return { revision, credentials: current, canReplace: true };
  }

  /**
   * Unseals a stored token; one that cannot be unsealed is a miss, never an
   * error to the caller. A sealer that cannot answer now (SealerUnavailableError)
   * is not: the token is most likely good, and replacing it would only have
   * every instance mint over it in turn. That error goes on, to degraded mode.
   */
  async #unseal(item: StoredItem): Promise<{ token?: Token }> {
    const stored = item.token;
    if (!stored) return {};
    try {
      const accessToken = await this.#deps.sealer.unseal(stored.sealed, item.pk);
      const { sealed: _, ...meta } = stored;
      return { token: { ...meta, accessToken } };
    } catch (error) {
      if (error instanceof SealerUnavailableError) throw error;
      if (error instanceof SealedUnderOtherKeyError) {
        // Expected once per item after the cache key changed: not a failure.
        this.#deps.count?.('OtherKeyItems');
        this.#deps.logger.info('cached token sealed under another key; re-minting', {
          key: item.pk,
        });
        return {};
      }
      this.#deps.count?.('UnsealFailures');
      this.#deps.logger.warn('cached token could not be unsealed; re-minting', {
        key: item.pk,
        error: describe(error),
      });
      return {};
    }
  }
}
