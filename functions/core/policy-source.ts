/**
 * The access policy as configuration that changes at run time: fetched from
 * where the deployment keeps it (AWS AppConfig in AWS, a file or a variable
 * locally), checked with the same code as the deploy-time validator, and
 * cached for at most a maximum age. A document that fails the check is never
 * used: the last good policy stays in force, and the rejection is logged with
 * every problem and counted (the `PolicyRejected` metric has an alarm).
 */
import { createHash } from 'node:crypto';
import { type AccessGrant, AccessPolicy } from './access-policy.js';
import type { Clock } from './clock.js';
import { describe } from './describe-error.js';
import { ConfigError, UpstreamUnavailableError } from './errors.js';
import type { CoreLogger } from './token-service-types.js';

/** The policy in force, and which document it came from. */
export interface LoadedPolicy {
  readonly policy: AccessPolicy;
  /**
   * The store's label of the document (AppConfig's version label, when the
   * deployed version has one), else its digest.
   */
  readonly version: string;
  /**
   * `sha256:` and 12 hex digits of the document, as `tvm policy validate`
   * prints for a file (absent only for a test's fixed policy).
   */
  readonly digest?: string;
  /** Epoch ms when this document was loaded (0 only for a test's fixed policy). */
  readonly loadedAt: number;
}

/** Where the functions get the policy from; `current` may fetch. */
export interface PolicyProvider {
  /**
   * The policy in force.
   * @throws UpstreamUnavailableError (503, with Retry-After) while no valid policy was ever loaded
   */
  current(): Promise<LoadedPolicy>;
}

/** A document as its store returns it. */
export interface FetchedDocument {
  readonly text: string;
  /** The store's label of this version (AppConfig's VersionLabel), when it has one. */
  readonly version?: string;
}

export type PolicyMetric = 'PolicyRejected' | 'PolicyFetchFailures';

export interface PolicySourceOptions {
  /** Reads the current document from its store. */
  readonly fetch: () => Promise<FetchedDocument>;
  /** Names the store in logs and errors, e.g. `AppConfig access-policy` or a file path. */
  readonly source: string;
  /** A fetched policy is used for at most this long before the store is asked again. */
  readonly maxAgeSeconds: number;
  readonly clock: Clock;
  readonly logger: CoreLogger;
  readonly count?: (metric: PolicyMetric) => void;
  /** Grants every document gets from the deployment (the key-issuing job's). */
  readonly fixedGrants?: readonly AccessGrant[];
  /** While no policy is loaded, the store is asked again after this long. Default 1 s. */
  readonly retrySeconds?: number;
}

/** A test's fixed policy: never fetched, labelled `version`, with no document behind it. */
export function fixedPolicy(policy: AccessPolicy, version = 'test'): PolicyProvider {
  const loaded: LoadedPolicy = { policy, version, loadedAt: 0 };
  return { current: async () => loaded };
}

export const documentDigest = (text: string): string =>
  `sha256:${createHash('sha256').update(text).digest('hex').slice(0, 12)}`;

/**
 * A policy given inline (`ACCESS_POLICY`), checked already and never read
 * again: its version is its document's digest, as for a file or AppConfig,
 * loaded at `loadedAt` (epoch ms, when the process read it).
 */
export function inlinePolicy(policy: AccessPolicy, text: string, loadedAt: number): PolicyProvider {
  const digest = documentDigest(text);
  const loaded: LoadedPolicy = { policy, version: digest, digest, loadedAt };
  return { current: async () => loaded };
}

/**
 * The access policy fetched from its store at most every `maxAgeSeconds`,
 * counted from the store's last answer: revoking a grant takes effect within
 * that bound plus one fetch (in the callers' vends; tokens already handed out
 * stay valid at the provider until they expire). Counting from the answer,
 * not the ask, keeps polls at least `maxAgeSeconds` apart where the store
 * sees them, which AppConfig requires of a session's polls. While no policy
 * is loaded, a store that could not be reached is asked again after
 * `retrySeconds`; one that answered (with a document that failed the check)
 * after `maxAgeSeconds`, as it would not answer sooner. Concurrent callers
 * share one fetch.
 */
export class PolicySource implements PolicyProvider {
  readonly #options: PolicySourceOptions;
  #loaded: LoadedPolicy | undefined;
  #loadedText: string | undefined;
  /** When the store may be asked again (epoch ms); undefined before the first ask. */
  #nextAskAt: number | undefined;
  #inflight: Promise<void> | undefined;

  constructor(options: PolicySourceOptions) {
    this.#options = options;
  }

  /** The policy in force without asking the store (undefined before the first load). */
  peek(): LoadedPolicy | undefined {
    return this.#loaded;
  }

  /**
   * The text of the document in force (the last one loaded), once one is: a
   * rejected version never replaces it. The local stack hands it to
   * `npm run admin` while the policy file holds an invalid edit.
   */
  get loadedText(): string | undefined {
    return this.#loadedText;
  }

  async current(): Promise<LoadedPolicy> {
    const { clock } = this.#options;
    if (this.#nextAskAt === undefined || clock.now() >= this.#nextAskAt) {
      this.#inflight ??= this.#refresh().finally(() => {
        this.#inflight = undefined;
      });
      await this.#inflight;
    }
    if (!this.#loaded) {
      throw new UpstreamUnavailableError(
        'No valid access policy is loaded yet: no token is served until one is.',
        Math.max(1, Math.ceil(((this.#nextAskAt ?? 0) - clock.now()) / 1000)),
      );
    }
    return this.#loaded;
  }

  async #refresh(): Promise<void> {
    const { fetch, source, clock, logger, count, fixedGrants = [] } = this.#options;
    const { maxAgeSeconds, retrySeconds = 1 } = this.#options;
    let document: FetchedDocument;
    try {
      document = await fetch();
    } catch (error) {
      this.#nextAskAt = clock.now() + (this.#loaded ? maxAgeSeconds : retrySeconds) * 1000;
      count?.('PolicyFetchFailures');
      logger.warn('access policy fetch failed', {
        source,
        error: describe(error),
        keeping: this.#loaded?.version ?? null,
      });
      return;
    }
    this.#nextAskAt = clock.now() + maxAgeSeconds * 1000;
    const digest = documentDigest(document.text);
    const version = document.version ?? digest;
    if (document.text === this.#loadedText && version === this.#loaded?.version) return;
    let policy: AccessPolicy;
    try {
      policy = AccessPolicy.parse(document.text, { source, fixedGrants });
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      count?.('PolicyRejected');
      // The message names every problem, and quotes no more of the document than ids.
      logger.error('access policy rejected', {
        source,
        version,
        digest,
        problems: error.message,
        keeping: this.#loaded?.version ?? null,
      });
      return;
    }
    this.#loaded = { policy, version, digest, loadedAt: clock.now() };
    this.#loadedText = document.text;
    logger.info('access policy loaded', {
      source,
      version,
      digest,
      scopes: policy.scopes.size,
      principals: policy.principals.length,
    });
  }
}
