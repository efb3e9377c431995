import { SecretsProvider } from '@aws-lambda-powertools/parameters/secrets';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { GetSecretValueCommand } from '@aws-sdk/client-secrets-manager';
import * as v from 'valibot';
import { ConfigError, CredentialsUnavailableError } from '../core/errors.js';
import type { CredentialsSource, ProviderCredentials } from '../core/ports.js';
import type { CoreLogger } from '../core/token-service.js';

/**
 * Why a provider key cannot be used, or undefined. The provider joins key and
 * secret literally as `key:secret` before Base64 (its document, section 4.1),
 * so a key containing `:` would be split at the wrong place by the server:
 * such a key is refused when it is loaded, never sent.
 */
export function providerKeyProblem(key: string): string | undefined {
  if (key.includes(':')) {
    return 'the provider key contains ":", which the provider\'s Basic scheme (key:secret) cannot carry';
  }
  return undefined;
}

/** SecretString of the provider credentials secret. */
const SecretSchema = v.object({
  key: v.pipe(v.string(), v.nonEmpty()),
  secret: v.pipe(v.string(), v.nonEmpty()),
});

/** Credentials from the environment or the simulator (local stack); never re-read. */
export class StaticCredentials implements CredentialsSource {
  #credentials: ProviderCredentials;

  /** @throws ConfigError when the key cannot be sent (see providerKeyProblem). */
  constructor(credentials: ProviderCredentials) {
    this.#credentials = StaticCredentials.#checked(credentials);
  }

  async get(): Promise<ProviderCredentials> {
    return this.#credentials;
  }

  /** Swaps the pair (local rotation drills). */
  set(credentials: ProviderCredentials): void {
    this.#credentials = StaticCredentials.#checked(credentials);
  }

  static #checked(credentials: ProviderCredentials): ProviderCredentials {
    const problem = providerKeyProblem(credentials.key);
    if (problem) throw new ConfigError(`Invalid provider credentials: ${problem}`);
    return credentials;
  }
}

/**
 * Keeps the secret's version beside its value: Powertools caches what `_get`
 * returns, so the version is cached (and re-read) together with the value.
 */
class VersionedSecretsProvider extends SecretsProvider {
  readonly #sm: SecretsManagerClient;

  constructor(client: SecretsManagerClient) {
    super({ awsSdkV3Client: client });
    this.#sm = client;
  }

  protected override async _get(name: string): Promise<string | undefined> {
    const out = await this.#sm.send(new GetSecretValueCommand({ SecretId: name }));
    if (out.SecretString === undefined) return undefined;
    return JSON.stringify({ value: out.SecretString, version: out.VersionId ?? 'unknown' });
  }
}

/** After a failed re-read, the cached value is used this long before trying again. */
const FAILED_READ_BACKOFF_MS = 30_000;

/**
 * The secret's content is unusable (not `{"key","secret"}`, no SecretString,
 * a key the provider cannot take). A kind of unavailability: the core serves
 * what it can without the secret and answers 503 otherwise, never 500.
 * Messages never quote the content.
 */
export class CredentialsSecretError extends CredentialsUnavailableError {
  override name = 'CredentialsSecretError';
}

/** The credentials in a raw value as VersionedSecretsProvider caches it. */
function parseSecret(raw: string | undefined): ProviderCredentials {
  if (raw === undefined)
    throw new CredentialsSecretError('The credentials secret has no SecretString.');
  const { value, version } = JSON.parse(raw) as { value: string; version: string };
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new CredentialsSecretError('The credentials secret is not JSON {"key","secret"}.');
  }
  const result = v.safeParse(SecretSchema, parsed);
  if (!result.success) {
    throw new CredentialsSecretError('The credentials secret is not JSON {"key","secret"}.');
  }
  const keyProblem = providerKeyProblem(result.output.key);
  if (keyProblem)
    throw new CredentialsSecretError(`The credentials secret is unusable: ${keyProblem}.`);
  return { ...result.output, version };
}

/**
 * The provider key and secret from Secrets Manager through Powertools
 * Parameters: cached 5 minutes, re-read on demand (after a 401, or to check
 * a version seen in the cache). When a re-read after max age fails, the last
 * good value keeps being used and the failure logged, and no new read is
 * tried for 30 s, so an outage does not slow every vend. A forced re-read
 * that fails (or falls in those 30 s) throws CredentialsUnavailableError: its
 * caller asked for the current version and must not mistake the cached one
 * for it.
 */
export class SecretsManagerCredentials implements CredentialsSource {
  readonly #provider: VersionedSecretsProvider;
  readonly #secretId: string;
  readonly #maxAgeSeconds: number;
  readonly #logger: CoreLogger;
  readonly #now: () => number;
  #last: ProviderCredentials | undefined;
  /** The cached string `#last` was parsed from: a vend parses the secret only when it changed. */
  #lastRaw: string | undefined;
  #noReadBeforeMs = 0;
  /** Where the next read queues: reads run one at a time, in the order they were asked. */
  #queue: Promise<unknown> = Promise.resolve();
  /** The plain read asked and not yet answered: later plain reads share it. */
  #reading: Promise<ProviderCredentials> | undefined;
  /** The cached value could not be parsed: the next read fetches the secret again. */
  #cachedUnusable = false;
  /** Forced reads asked and not yet answered. */
  #forcing = 0;

  constructor(options: {
    client: SecretsManagerClient;
    secretId: string;
    logger: CoreLogger;
    maxAgeSeconds?: number;
    now?: () => number;
  }) {
    this.#now = options.now ?? (() => Date.now());
    this.#provider = new VersionedSecretsProvider(options.client);
    this.#secretId = options.secretId;
    this.#logger = options.logger;
    this.#maxAgeSeconds = options.maxAgeSeconds ?? 300;
  }

  /**
   * Reads run one at a time, in the order they were asked, so an answer never
   * overtakes a later one: a slow read cannot put an older version back in the
   * cache after a newer one was read, and a forced read (after a 401, or to
   * learn the current version) fetches after every read asked before it.
   * Concurrent plain reads share one: a cold instance's first vends, or the
   * scheduled refresh's scopes, would otherwise each fetch the secret, as
   * Powertools' cache does not join reads in flight. A forced read is never
   * shared: it needs a value fetched after it was asked. While one is under
   * way, a plain read answers with the value in use rather than queue behind
   * its fetch (every vend reads the secret, L1 hits included).
   */
  get(options: { forceRefresh?: boolean } = {}): Promise<ProviderCredentials> {
    if (options.forceRefresh === true) {
      this.#forcing++;
      return this.#queued(() => this.#read(true)).finally(() => {
        this.#forcing--;
      });
    }
    if (this.#forcing > 0 && this.#last) return Promise.resolve(this.#last);
    this.#reading ??= this.#queued(() => this.#read(false)).finally(() => {
      this.#reading = undefined;
    });
    return this.#reading;
  }

  #queued(read: () => Promise<ProviderCredentials>): Promise<ProviderCredentials> {
    const run = this.#queue.then(read);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #read(forced: boolean): Promise<ProviderCredentials> {
    if (this.#last && this.#now() < this.#noReadBeforeMs) {
      if (forced) {
        throw new CredentialsUnavailableError(
          'The credentials secret could not be re-read moments ago.',
        );
      }
      return this.#last;
    }
    let raw: string | undefined;
    try {
      raw = (await this.#provider.get(this.#secretId, {
        maxAge: this.#maxAgeSeconds,
        // Powertools caches what was fetched, usable or not: an unusable value
        // is fetched again rather than parsed again until its max age.
        forceFetch: forced || this.#cachedUnusable,
      })) as string | undefined;
    } catch (error) {
      const described = {
        error: error instanceof Error ? error.name : typeof error,
        cause:
          error instanceof Error && error.cause instanceof Error ? error.cause.name : undefined,
      };
      if (this.#last && !forced) {
        this.#logger.warn(
          'credentials secret could not be re-read; using the cached value',
          described,
        );
        this.#noReadBeforeMs = this.#now() + FAILED_READ_BACKOFF_MS;
        return this.#last;
      }
      this.#logger.warn('credentials secret could not be read', described);
      if (this.#last) this.#noReadBeforeMs = this.#now() + FAILED_READ_BACKOFF_MS;
      throw new CredentialsUnavailableError('The credentials secret could not be read.', {
        cause: error,
      });
    }
    this.#cachedUnusable = false;
    if (raw !== undefined && raw === this.#lastRaw && this.#last) return this.#last;
    let credentials: ProviderCredentials;
    try {
      credentials = parseSecret(raw);
    } catch (error) {
      this.#cachedUnusable = true;
      // A rotation that wrote something unusable must not take the service
      // down: keep the last good value for plain reads, like an outage.
      if (!(error instanceof CredentialsSecretError) || !this.#last || forced) throw error;
      this.#logger.error('credentials secret is unusable; using the cached value', {
        error: error.message,
      });
      this.#noReadBeforeMs = this.#now() + FAILED_READ_BACKOFF_MS;
      return this.#last;
    }
    if (this.#last && this.#last.version !== credentials.version) {
      this.#logger.info('credentials secret has a new version', {
        credentialsVersion: credentials.version,
      });
    }
    this.#last = credentials;
    this.#lastRaw = raw;
    return credentials;
  }
}
