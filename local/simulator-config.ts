/**
 * Provider simulator configuration: the options startProviderSimulator takes, the demo
 * credentials and defaults, and the mutable configuration the endpoints read.
 */

export type UnscopedMode = 'omit' | 'empty' | 'either';
export type CreatedAtUnit = 's' | 'ms';

export interface ProviderCredentials {
  key: string;
  secret: string;
}

export interface SimulatorOptions {
  /** Default 0 (random free port). */
  port?: number;
  /** Default '127.0.0.1'. */
  host?: string;
  /** Default DEMO_PROVIDER_CREDENTIALS. */
  credentials?: ProviderCredentials;
  /** Business application ids usable as scopes and as path ids. Default ['ba_demo_1', 'ba_demo_2']. */
  allowedScopes?: string[];
  /** How an unscoped token is requested. Default 'either'. */
  unscopedMode?: UnscopedMode;
  /** Partner feature flag for 4.2. Default true. */
  keyIssuingEnabled?: boolean;
  /** Token lifetime in seconds. Default 7200. */
  expiresIn?: number;
  /** Unit of created_at in token responses. Default 's'. */
  createdAtUnit?: CreatedAtUnit;
  /** Millisecond clock. Default Date.now. */
  now?: () => number;
}

export type MutableSimulatorOptions = Partial<
  Pick<
    SimulatorOptions,
    'expiresIn' | 'createdAtUnit' | 'keyIssuingEnabled' | 'unscopedMode' | 'allowedScopes'
  >
>;

export const DEMO_PROVIDER_CREDENTIALS: Readonly<ProviderCredentials> = Object.freeze({
  key: 'sim_demo_key',
  secret: 'sim_demo_secret_local_only',
});
export const DEFAULT_ALLOWED_SCOPES: readonly string[] = Object.freeze(['ba_demo_1', 'ba_demo_2']);
export const DEFAULT_EXPIRES_IN = 7200;

export interface Config {
  allowedScopes: string[];
  unscopedMode: UnscopedMode;
  keyIssuingEnabled: boolean;
  expiresIn: number;
  createdAtUnit: CreatedAtUnit;
}

export function configFrom(options: SimulatorOptions): Config {
  return {
    allowedScopes: [...(options.allowedScopes ?? DEFAULT_ALLOWED_SCOPES)],
    unscopedMode: options.unscopedMode ?? 'either',
    keyIssuingEnabled: options.keyIssuingEnabled ?? true,
    expiresIn: options.expiresIn ?? DEFAULT_EXPIRES_IN,
    createdAtUnit: options.createdAtUnit ?? 's',
  };
}
