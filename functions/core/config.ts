import { type AccessGrant, AccessPolicy } from './access-policy.js';
import { ConfigError } from './errors.js';
import { isLoopbackHost } from './loopback.js';
import type { UnscopedScopeMode } from './provider-client.js';

export type Env = Readonly<Record<string, string | undefined>>;

/**
 * Reads environment variables in one place. Each reader records a problem
 * instead of throwing, so `done()` reports every problem at once.
 */
export class EnvReader {
  readonly #env: Env;
  readonly #problems: string[] = [];

  constructor(env: Env) {
    this.#env = env;
  }

  required(name: string): string {
    const value = this.#env[name];
    if (value === undefined || value.trim() === '') {
      this.#problems.push(`${name} is required`);
      return '';
    }
    return value;
  }

  optional(name: string, fallback: string): string {
    const value = this.#env[name];
    return value === undefined || value === '' ? fallback : value;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const value = this.optional(name, fallback);
    if (!(allowed as readonly string[]).includes(value)) {
      this.#problems.push(`${name} must be one of ${allowed.join(', ')}`);
      return fallback;
    }
    return value as T;
  }

  /** `why`, when given, follows the range in the problem: what the bounds come from. */
  integer(name: string, fallback: number, min: number, max: number, why?: string): number {
    const raw = this.#env[name];
    if (raw === undefined || raw === '') return fallback;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      this.#problems.push(
        `${name} must be an integer from ${min} to ${max}${why === undefined ? '' : ` (${why})`}`,
      );
      return fallback;
    }
    return Number(raw);
  }

  url(name: string, fallback?: string): string {
    const value = fallback === undefined ? this.required(name) : this.optional(name, fallback);
    if (value !== '' && !URL.canParse(value)) this.#problems.push(`${name} must be a URL`);
    return value;
  }

  /**
   * A required URL that secrets may be sent to: `https:`, or `http:` on a
   * loopback host only, so no secret or token crosses a network in clear.
   */
  secureUrl(name: string): string {
    const value = this.url(name);
    if (!URL.canParse(value)) return value;
    const { protocol, hostname, username, password } = new URL(value);
    if (protocol !== 'https:' && !(protocol === 'http:' && isLoopbackHost(hostname))) {
      this.#problems.push(
        `${name} must be an https: URL (http: only for localhost, 127.0.0.0/8 or [::1])`,
      );
    }
    // fetch refuses such a URL (every call would fail as "unreachable"), and
    // the credentials would be printed and logged with the URL.
    if (username !== '' || password !== '') {
      this.#problems.push(`${name} must not contain a user name or password`);
    }
    return value;
  }

  accessPolicy(name: string, fixedGrants: readonly AccessGrant[] = []): AccessPolicy | undefined {
    const raw = this.required(name);
    if (raw === '') return undefined;
    try {
      return AccessPolicy.parse(raw, { source: name, fixedGrants });
    } catch (error) {
      this.#problems.push(error instanceof Error ? error.message : String(error));
      return undefined;
    }
  }

  /**
   * Where the functions read the access policy: AWS AppConfig when
   * `POLICY_APPCONFIG_APPLICATION`, `_ENVIRONMENT` and `_PROFILE` are set (as
   * the stack sets them), else the inline `ACCESS_POLICY`. `KEY_ISSUER_ARN`,
   * when set, is granted the unscoped token in every document.
   */
  policySettings(): PolicySettings | undefined {
    const keyIssuer = this.optional('KEY_ISSUER_ARN', '');
    const fixedGrants: AccessGrant[] = keyIssuer ? [{ principal: keyIssuer, unscoped: true }] : [];
    const maxAgeSeconds = this.integer(
      'POLICY_MAX_AGE_SECONDS',
      60,
      APPCONFIG_MIN_POLL_SECONDS,
      3600,
      `AppConfig refuses polls closer together than ${APPCONFIG_MIN_POLL_SECONDS} s`,
    );
    const names = APPCONFIG_VARIABLES.map((name) => this.optional(name, ''));
    if (names.some((name) => name !== '')) {
      const [application = '', environment = '', profile = ''] = names;
      APPCONFIG_VARIABLES.forEach((name, index) => {
        if (names[index] === '')
          this.#problems.push(`${name} is required with the other POLICY_APPCONFIG_ variables`);
      });
      return { kind: 'appconfig', application, environment, profile, maxAgeSeconds, fixedGrants };
    }
    const policy = this.accessPolicy('ACCESS_POLICY', fixedGrants);
    return policy === undefined
      ? undefined
      : { kind: 'inline', policy, text: this.#env.ACCESS_POLICY ?? '' };
  }

  problem(message: string): void {
    this.#problems.push(message);
  }

  /** Throws one ConfigError naming every problem found. */
  done(): void {
    if (this.#problems.length > 0) {
      throw new ConfigError(`Invalid configuration: ${this.#problems.join('; ')}`);
    }
  }
}

/**
 * The shortest poll interval AppConfig accepts: StartConfigurationSession's
 * `RequiredMinimumPollIntervalInSeconds` has "Valid Range: Minimum value of 15.
 * Maximum value of 86400." (AWS AppConfig API Reference, StartConfigurationSession).
 * The functions poll every POLICY_MAX_AGE_SECONDS, so that is its minimum too.
 */
export const APPCONFIG_MIN_POLL_SECONDS = 15;

const APPCONFIG_VARIABLES = [
  'POLICY_APPCONFIG_APPLICATION',
  'POLICY_APPCONFIG_ENVIRONMENT',
  'POLICY_APPCONFIG_PROFILE',
] as const;

/** Where the access policy comes from (see `EnvReader.policySettings`). */
export type PolicySettings =
  | {
      readonly kind: 'inline';
      readonly policy: AccessPolicy;
      /** The document as given: its digest is the policy's version. */
      readonly text: string;
    }
  | {
      readonly kind: 'appconfig';
      readonly application: string;
      readonly environment: string;
      readonly profile: string;
      /**
       * `POLICY_MAX_AGE_SECONDS`: a fetched policy is used at most this long, and
       * AppConfig is asked to allow polls this often. 15..3600, default 60.
       */
      readonly maxAgeSeconds: number;
      readonly fixedGrants: readonly AccessGrant[];
    };

/** The vend function's settings that do not depend on where it runs. */
export interface VendSettings {
  readonly policy: PolicySettings;
  readonly providerBaseUrl: string;
  readonly unscopedScopeMode: UnscopedScopeMode;
  readonly refreshAheadSeconds: number;
  readonly tableName: string;
}

export function readVendSettings(
  reader: EnvReader,
  defaults: { tableName?: string } = {},
): VendSettings {
  const policy = reader.policySettings();
  const settings = {
    providerBaseUrl: reader.secureUrl('PROVIDER_BASE_URL'),
    unscopedScopeMode: reader.oneOf('UNSCOPED_SCOPE_MODE', ['omit', 'empty'] as const, 'omit'),
    refreshAheadSeconds: reader.integer('REFRESH_AHEAD_SECONDS', 900, 60, 3600),
    tableName:
      defaults.tableName === undefined
        ? reader.required('TABLE_NAME')
        : reader.optional('TABLE_NAME', defaults.tableName),
  };
  reader.done();
  return { ...settings, policy: policy as PolicySettings };
}
