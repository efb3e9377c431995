import {
  CreateSecretCommand,
  DescribeSecretCommand,
  type DescribeSecretCommandOutput,
  PutSecretValueCommand,
  ResourceExistsException,
  ResourceNotFoundException,
  type SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { ConfigError } from '../core/errors.js';
import { assertBusinessApplicationId } from '../issue-keys/business-application-id.js';
import { KeyVaultError, KeyVaultUnavailableError } from '../issue-keys/errors.js';
import type { KeyVault } from '../issue-keys/ports.js';

/** Characters Secrets Manager allows in a secret name. */
const SECRET_NAME_CHARS = /^[A-Za-z0-9/_+=.@-]+$/;
const MAX_PREFIX_LENGTH = 256;
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export interface SecretsManagerKeyVaultOptions {
  readonly client: SecretsManagerClient;
  /** `SECRETS_PREFIX`: secrets are named `<prefix>/basic-auth/<id>`. */
  readonly prefix: string;
  /** KMS key for new secrets. Default: Secrets Manager's own `aws/secretsmanager`. */
  readonly kmsKeyId?: string;
}

/** Why a prefix cannot start a secret name, or undefined. */
export function secretsPrefixProblem(prefix: string): string | undefined {
  if (
    prefix === '' ||
    prefix.length > MAX_PREFIX_LENGTH ||
    !SECRET_NAME_CHARS.test(prefix) ||
    prefix.startsWith('/') ||
    prefix.endsWith('/')
  ) {
    return `the secrets prefix must be 1..${MAX_PREFIX_LENGTH} of A-Z a-z 0-9 / _ + = . @ - without a leading or trailing /`;
  }
  return undefined;
}

/** The answer as SecretString when it is UTF-8 (as a JSON answer is), else as SecretBinary. */
function secretValue(body: Uint8Array): { SecretString: string } | { SecretBinary: Uint8Array } {
  try {
    return { SecretString: UTF8.decode(body) };
  } catch {
    return { SecretBinary: body };
  }
}

function wrap(
  operation: string,
  name: string,
  error: unknown,
  As: typeof KeyVaultError | typeof KeyVaultUnavailableError = KeyVaultError,
): KeyVaultError | KeyVaultUnavailableError {
  const errorName = error instanceof Error ? error.name : 'UnknownError';
  return new As(`Secrets Manager ${operation} of ${name} failed (${errorName})`, {
    cause: error,
  });
}

/**
 * The name of the secret holding `id`'s issued keys: `<prefix>/basic-auth/<id>`,
 * a `:` of the id written as `@` (secret names cannot hold `:`, ids cannot
 * hold `@`, so names stay unique). The vault writes there, and the stack
 * grants readers exactly there (infra/constructs/key-issuing.ts).
 */
export function keysSecretName(prefix: string, id: string): string {
  return `${prefix}/basic-auth/${id.replaceAll(':', '@')}`;
}

/**
 * Issued keys as Secrets Manager secrets `<prefix>/basic-auth/<id>`, the provider's
 * answer stored whole. The Idempotency-Key is the `ClientRequestToken` (so the
 * version id): a retried store with the same key and answer makes no new version,
 * a forced reissue (new key) puts a new AWSCURRENT version.
 *
 * Secret names cannot hold `:`, which ids may (keysSecretName). The job
 * records the name it used.
 */
export class SecretsManagerKeyVault implements KeyVault {
  readonly #client: SecretsManagerClient;
  readonly #prefix: string;
  readonly #kmsKeyId?: string;

  /** @throws ConfigError for a prefix Secrets Manager cannot take. */
  constructor(options: SecretsManagerKeyVaultOptions) {
    const problem = secretsPrefixProblem(options.prefix);
    if (problem) throw new ConfigError(`Invalid key vault: ${problem}`);
    this.#client = options.client;
    this.#prefix = options.prefix;
    if (options.kmsKeyId !== undefined) this.#kmsKeyId = options.kmsKeyId;
  }

  locationOf(id: string): string {
    assertBusinessApplicationId(id);
    return keysSecretName(this.#prefix, id);
  }

  async has(id: string): Promise<boolean> {
    const name = this.locationOf(id);
    let out: DescribeSecretCommandOutput;
    try {
      // Metadata only: the role may describe, never read, these secrets.
      out = await this.#client.send(new DescribeSecretCommand({ SecretId: name }));
    } catch (error) {
      if (error instanceof ResourceNotFoundException) return false;
      throw wrap('DescribeSecret', name, error, KeyVaultUnavailableError);
    }
    if (out.DeletedDate !== undefined) {
      // Neither CreateSecret nor PutSecretValue takes it now: issuing would only fail to store.
      throw new KeyVaultUnavailableError(
        `Secret ${name} is scheduled for deletion: restore it (or wait until it is deleted) before issuing keys`,
      );
    }
    // Keys are stored once the secret has a current value (not a placeholder without one).
    return Object.values(out.VersionIdsToStages ?? {}).some((stages) =>
      stages.includes('AWSCURRENT'),
    );
  }

  async put(
    id: string,
    body: Uint8Array,
    version: string,
  ): Promise<{ location: string; version: string }> {
    const name = this.locationOf(id);
    const value = secretValue(body);
    try {
      const out = await this.#client.send(
        new CreateSecretCommand({
          Name: name,
          ClientRequestToken: version,
          Description: `Basic Auth keys the provider issued for business application ${id} (token vending key-issuing job)`,
          ...(this.#kmsKeyId === undefined ? {} : { KmsKeyId: this.#kmsKeyId }),
          ...value,
        }),
      );
      return { location: name, version: out.VersionId ?? version };
    } catch (error) {
      // The secret exists: from an earlier key set, or a CreateSecret of ours whose answer was lost.
      if (!(error instanceof ResourceExistsException)) throw wrap('CreateSecret', name, error);
    }
    try {
      // Same ClientRequestToken and value as a version that exists: Secrets Manager does nothing.
      const out = await this.#client.send(
        new PutSecretValueCommand({ SecretId: name, ClientRequestToken: version, ...value }),
      );
      return { location: name, version: out.VersionId ?? version };
    } catch (error) {
      throw wrap('PutSecretValue', name, error);
    }
  }
}
