/**
 * The local stack's settings, read from the environment in one place for both
 * `npm start` and `npm run admin`. `npm run admin` reads the same variables,
 * falling back to what the running stack wrote to `.local/stack.json` for any
 * it was not given (see `stackFileEnv`).
 */
import { readFile } from 'node:fs/promises';
import * as v from 'valibot';
import { VendRequestSigner } from '../client/signed-request.js';
import type { AwsCredentials } from '../client/types.js';
import { providerKeyProblem } from '../functions/adapters/credentials.js';
import {
  type Env,
  EnvReader,
  readVendSettings,
  type VendSettings,
} from '../functions/core/config.js';
import { ConfigError } from '../functions/core/errors.js';
import { readKeyIssuingSettings } from '../functions/issue-keys/config.js';
import { MAX_LOCAL_INSTANCES } from './instance-pool.js';
import {
  defaultAccessPolicy,
  type LocalIdentity,
  readLocalIdentities,
} from './local-identities.js';
import { type LocalPolicy, readLocalPolicy } from './policy-file.js';
import { DEFAULT_ALLOWED_SCOPES } from './provider-simulator.js';
import { DEMO_PROVIDER_CREDENTIALS } from './simulator-config.js';
import type { StackInfo } from './stack.js';

export const DEFAULT_TABLE_NAME = 'token-vending-local';
export const DEFAULT_SECRETS_DIR = '.local/secrets';
/** Placeholder for settings readers that need a URL when the stack runs the simulator. */
const LOOPBACK = 'http://127.0.0.1';

export interface LocalSettings {
  /** `PORT`: the local Function URL's port (0: any free one). */
  readonly port: number;
  /** Whether `PORT` was set at all. */
  readonly portGiven: boolean;
  readonly region: string;
  /** `LOCAL_IDENTITIES` or the demo identity; the first signs the key job's requests. */
  readonly identities: readonly LocalIdentity[];
  /** `PROVIDER_BASE_URL` with its credentials; undefined: the provider simulator. */
  readonly externalProvider?: {
    readonly baseUrl: string;
    readonly key: string;
    readonly secret: string;
  };
  /** Table, unscoped mode, refresh-ahead (`providerBaseUrl` is a placeholder with the simulator). */
  readonly vend: VendSettings;
  /** `ACCESS_POLICY_FILE`, `ACCESS_POLICY`, or the demo policy. */
  readonly policy: LocalPolicy;
  /** `DYNAMODB_ENDPOINT`; undefined: embedded DynamoDB Local. */
  readonly dynamodbEndpoint?: string;
  /** `LOCAL_SECRETS_DIR` as given (relative to the working directory). */
  readonly localSecretsDir: string;
  readonly keyIssuing: {
    readonly businessApplicationIds: readonly string[];
    readonly requestBody?: string;
  };
  readonly refreshIntervalSeconds: number;
  readonly inUseWindowSeconds: number;
  /** `LOCAL_INSTANCES`: how many vend handler instances the local URL spreads requests over. */
  readonly instances: number;
}

/** Runs `read`; a ConfigError's problems go to `problems` instead. */
function collect<T>(problems: string[], read: () => T): T | undefined {
  try {
    return read();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(error.message.replace(/^Invalid configuration: /, ''));
    return undefined;
  }
}

/**
 * Reads the local stack's environment (docs/configuration.md lists them).
 * @throws ConfigError naming every problem; never quoting a key or secret.
 */
export function readLocalSettings(env: Env): LocalSettings {
  const reader = new EnvReader(env);
  const port = reader.integer('PORT', 8787, 0, 65535);
  const portGiven = reader.optional('PORT', '') !== '';
  const region = reader.optional('AWS_REGION', 'us-east-1');
  const identities = readLocalIdentities(reader, env);
  const providerUrl = reader.optional('PROVIDER_BASE_URL', '');
  // Without them, the simulator's (e.g. for a simulator run on its own).
  const givenKey = reader.optional('PROVIDER_KEY', '');
  const givenSecret = reader.optional('PROVIDER_SECRET', '');
  if (Boolean(givenKey) !== Boolean(givenSecret)) {
    reader.problem(
      "PROVIDER_KEY and PROVIDER_SECRET go together: set both, or neither for the simulator's",
    );
  }
  const key = givenKey || DEMO_PROVIDER_CREDENTIALS.key;
  const secret = givenSecret || DEMO_PROVIDER_CREDENTIALS.secret;
  const keyProblem = providerUrl && key ? providerKeyProblem(key) : undefined;
  // The message names the variable only: the key itself is never echoed.
  if (keyProblem) reader.problem(`PROVIDER_KEY is unusable: ${keyProblem}`);
  const policyGiven =
    reader.optional('ACCESS_POLICY', '') !== '' || reader.optional('ACCESS_POLICY_FILE', '') !== '';
  if (providerUrl && !policyGiven) {
    // The default policy lists the simulator's scopes, which a real provider does not know.
    reader.problem(
      'ACCESS_POLICY or ACCESS_POLICY_FILE is required when PROVIDER_BASE_URL is set (its scopes are sent upstream)',
    );
  }
  const dynamodbEndpoint = reader.url('DYNAMODB_ENDPOINT', '');
  const localSecretsDir = reader.optional('LOCAL_SECRETS_DIR', DEFAULT_SECRETS_DIR);
  const refreshIntervalSeconds = reader.integer('REFRESH_INTERVAL_SECONDS', 300, 60, 3600);
  const inUseWindowSeconds = reader.integer('IN_USE_WINDOW_SECONDS', 3600, 300, 86_400);
  const instances = reader.integer('LOCAL_INSTANCES', 1, 1, MAX_LOCAL_INSTANCES);
  const policy = readLocalPolicy(reader, () =>
    defaultAccessPolicy(reader, identities, DEFAULT_ALLOWED_SCOPES),
  );

  // The vend reader checks PROVIDER_BASE_URL (https, or http on loopback); with the
  // simulator, whose URL is known only once it runs, it sees a placeholder. The key
  // job's reader is asked for its own variables only (the stack has no VEND_URL).
  const problems: string[] = [];
  collect(problems, () => reader.done());
  const jobReader = new EnvReader({ ...env, PROVIDER_BASE_URL: LOOPBACK, VEND_URL: LOOPBACK });
  const job = readKeyIssuingSettings(jobReader);
  collect(problems, () => jobReader.done());
  const vend = collect(problems, () =>
    readVendSettings(
      new EnvReader({
        ...env,
        // Checked above; the vend reader sees it inline (its other settings are its own).
        ACCESS_POLICY: policy?.text ?? '{"scopes":[],"grants":[]}',
        ACCESS_POLICY_FILE: undefined,
        PROVIDER_BASE_URL: providerUrl || LOOPBACK,
      }),
      { tableName: DEFAULT_TABLE_NAME },
    ),
  );
  if (vend === undefined || policy === undefined || problems.length > 0) {
    throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
  }
  return {
    port,
    portGiven,
    region,
    identities,
    ...(providerUrl ? { externalProvider: { baseUrl: providerUrl, key, secret } } : {}),
    vend,
    policy,
    ...(dynamodbEndpoint ? { dynamodbEndpoint } : {}),
    localSecretsDir,
    keyIssuing: {
      businessApplicationIds: job.businessApplicationIds,
      ...(job.requestBody === undefined ? {} : { requestBody: job.requestBody }),
    },
    refreshIntervalSeconds,
    inUseWindowSeconds,
    instances,
  };
}

/**
 * What a running stack recorded, as the environment variables `npm start`
 * was (in effect) given: the fallback for each variable `npm run admin` lacks.
 * The access policy is the stack's own, so admin reports the version the
 * vend URL serves.
 */
export function stackFileEnv(info: StackInfo): Env {
  return {
    AWS_REGION: info.region,
    DYNAMODB_ENDPOINT: info.dynamodbEndpoint,
    TABLE_NAME: info.tableName,
    UNSCOPED_SCOPE_MODE: info.unscopedScopeMode,
    // The stack's policy file, read afresh; else the policy it serves.
    ...(info.accessPolicyFile === undefined
      ? { ACCESS_POLICY: info.accessPolicy ?? JSON.stringify({ scopes: info.scopes, grants: [] }) }
      : { ACCESS_POLICY_FILE: info.accessPolicyFile }),
    LOCAL_IDENTITIES: JSON.stringify([info.identity]),
    ...(info.providerSimulated ? {} : { PROVIDER_BASE_URL: info.providerUrl }),
    LOCAL_SECRETS_DIR: info.localSecretsDir,
    KEY_ISSUE_BUSINESS_APPLICATION_IDS: JSON.stringify(info.keyIssuing.businessApplicationIds),
    ...(info.keyIssuing.requestBody === undefined
      ? {}
      : { KEY_ISSUE_REQUEST_BODY: info.keyIssuing.requestBody }),
    REFRESH_AHEAD_SECONDS: String(info.refreshAheadSeconds),
    REFRESH_INTERVAL_SECONDS: String(info.refreshIntervalSeconds),
    IN_USE_WINDOW_SECONDS: String(info.inUseWindowSeconds),
  };
}

/** Variables that name the access policy: setting one replaces the stack's. */
const POLICY_VARIABLES = ['ACCESS_POLICY', 'ACCESS_POLICY_FILE'];

/** `env` over `fallback`: a variable set to a non-empty value wins. */
export function overlayEnv(fallback: Env, env: Env): Env {
  const set = Object.entries(env).filter(([, value]) => value !== undefined && value !== '');
  const base = { ...fallback };
  if (set.some(([name]) => POLICY_VARIABLES.includes(name))) {
    for (const name of POLICY_VARIABLES) delete base[name];
  }
  return { ...base, ...Object.fromEntries(set) };
}

const Identity = v.object({
  accessKeyId: v.string(),
  secretAccessKey: v.string(),
  sessionToken: v.optional(v.string()),
  arn: v.string(),
});

const StackInfoSchema = v.object({
  functionUrl: v.pipe(v.string(), v.url()),
  region: v.string(),
  providerUrl: v.pipe(v.string(), v.url()),
  providerSimulated: v.boolean(),
  dynamodbEndpoint: v.pipe(v.string(), v.url()),
  tableName: v.string(),
  unscopedScopeMode: v.string(),
  scopes: v.array(v.string()),
  identity: Identity,
  sealingKeyFile: v.string(),
  accessPolicyFile: v.optional(v.string()),
  accessPolicy: v.optional(v.string()),
  localSecretsDir: v.string(),
  keyIssuing: v.object({
    businessApplicationIds: v.array(v.string()),
    requestBody: v.optional(v.string()),
  }),
  refreshAheadSeconds: v.number(),
  refreshIntervalSeconds: v.number(),
  inUseWindowSeconds: v.number(),
  instances: v.optional(v.number()),
  control: v.optional(v.object({ url: v.pipe(v.string(), v.url()), token: v.string() })),
});

/** The stack file is missing, unreadable or not what this version of `npm start` writes. */
export class StackFileError extends Error {
  override name = 'StackFileError';
  constructor(message: string) {
    super(message);
    this.stack = `${this.name}: ${message}`;
  }
}

/**
 * Reads a stack file written by `npm start`; undefined when there is none.
 * @throws StackFileError when it cannot be read or lacks what admin needs.
 */
export async function readStackInfo(path: string, shownAs = path): Promise<StackInfo | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new StackFileError(
      `cannot read ${shownAs} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new StackFileError(`${shownAs} is not JSON`);
  }
  const parsed = v.safeParse(StackInfoSchema, json);
  if (!parsed.success) {
    const fields = [...new Set(parsed.issues.map((issue) => v.getDotPath(issue) ?? '(root)'))];
    throw new StackFileError(
      `${shownAs} lacks what npm run admin needs (${fields.join(', ')}): restart the local stack with npm start`,
    );
  }
  return parsed.output as StackInfo;
}

/**
 * Whether a local stack answers at `functionUrl`: any HTTP answer to a
 * `GET /healthz` signed as `identity`. Signed, as every caller of the URL
 * signs: an unsigned probe is answered too (403), but puts a false "refused a
 * signature" line in the stack's log, the log that explains real refusals.
 */
export async function stackAnswers(
  target: {
    readonly functionUrl: string;
    readonly region: string;
    readonly identity: AwsCredentials;
  },
  timeoutMs: number,
  fetchImpl: typeof fetch = globalThis.fetch,
): Promise<boolean> {
  try {
    const signer = new VendRequestSigner(
      new URL(target.functionUrl),
      target.region,
      target.identity,
    );
    const request = await signer.sign('healthz', {});
    const response = await fetchImpl(request.url, {
      headers: request.headers,
      signal: AbortSignal.timeout(timeoutMs),
    });
    await response.body?.cancel();
    return true;
  } catch {
    return false;
  }
}
