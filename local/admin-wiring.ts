/**
 * The admin function's core (functions/admin) wired to the running local
 * stack: its DynamoDB table, its sealing key, its provider (simulator or
 * PROVIDER_BASE_URL) and its vend URL. Settings come from the environment
 * `npm start` was given, each missing one from `.local/stack.json`.
 */
import { join, resolve } from 'node:path';
import { TokenVendingClient } from '../client/index.js';
import { StaticCredentials } from '../functions/adapters/credentials.js';
import { DynamoDbKeyJobIndex } from '../functions/adapters/dynamodb-key-job-index.js';
import { DynamoDbKeyJobStore } from '../functions/adapters/dynamodb-key-job-store.js';
import { DynamoDbTokenStore } from '../functions/adapters/dynamodb-token-store.js';
import { FileKeyVault } from '../functions/adapters/file-key-vault.js';
import { AesGcmSealer } from '../functions/adapters/sealers.js';
import { type AdminResult, createAdmin } from '../functions/admin/admin.js';
import type { Clock } from '../functions/core/clock.js';
import type { Env } from '../functions/core/config.js';
import { ConfigError } from '../functions/core/errors.js';
import { documentDigest } from '../functions/core/policy-source.js';
import type { CoreLogger } from '../functions/core/token-service-types.js';
import { createKeyIssuingJob } from '../functions/issue-keys/job.js';
import { forceRefresh } from '../functions/refresh/force-refresh.js';
import { createVendRuntime } from '../functions/vend-token/runtime.js';
import type { LocalIdentity } from './local-identities.js';
import { localPolicyProvider } from './policy-file.js';
import { DEMO_PROVIDER_CREDENTIALS } from './provider-simulator.js';
import { readSealingKey } from './sealing-key.js';
import { DEFAULT_STACK_FILE, type StackInfo } from './stack.js';
import {
  type LocalSettings,
  overlayEnv,
  readLocalSettings,
  readStackInfo,
  stackAnswers,
  stackFileEnv,
} from './stack-config.js';
import { askStackForPolicy } from './stack-control.js';
import { localTableClient } from './table.js';

/** A failure of the local wiring itself; the message starts with the code. */
export class LocalAdminError extends Error {
  override name = 'LocalAdminError';
  readonly code: string;
  constructor(code: string, detail: string) {
    super(`${code}: ${detail}`);
    this.code = code;
    this.stack = `${this.name}: ${this.message}`;
  }
}

/** Where the admin reaches the running stack, and with what. */
export interface LocalAdminTarget {
  readonly info: StackInfo;
  readonly settings: LocalSettings;
  /** `http://127.0.0.1:<PORT>` when PORT is set (and not 0), else the stack file's functionUrl. */
  readonly vendUrl: string;
  readonly dynamodbEndpoint: string;
  /** Absolute LOCAL_SECRETS_DIR. */
  readonly secretsDir: string;
  readonly sealingKey: Buffer;
  /** Said on stderr before the admin runs: the policy file is invalid, the stack's own is used. */
  readonly warning?: string;
}

/**
 * Resolves every setting: the environment first, then `<cwd>/.local/stack.json`,
 * which must exist (it names the stack's sealing key).
 * @throws LocalAdminError `no_local_stack`, StackFileError, ConfigError, SealingKeyError
 */
export async function resolveLocalAdmin(
  env: Env,
  cwd: string,
  fetchImpl: typeof fetch = globalThis.fetch,
): Promise<LocalAdminTarget> {
  const info = await readStackInfo(join(cwd, DEFAULT_STACK_FILE), DEFAULT_STACK_FILE);
  if (info === undefined) {
    throw new LocalAdminError(
      'no_local_stack',
      `no ${DEFAULT_STACK_FILE} here: start the local stack with npm start in this directory ` +
        '(npm run admin reads its DynamoDB endpoint, URLs and sealing key from that file)',
    );
  }
  const effective = overlayEnv(stackFileEnv(info), env);
  let settings: LocalSettings;
  let warning: string | undefined;
  try {
    settings = readLocalSettings(effective);
  } catch (error) {
    // An invalid edit of the policy file: the running stack keeps the last good
    // version in force, and the admin judges by the same.
    const inForce = await policyInForce(error, { env, effective, cwd, info }, fetchImpl);
    if (inForce === undefined) throw error;
    try {
      settings = readLocalSettings(overlayEnv(effective, { ACCESS_POLICY: inForce }));
    } catch {
      // Other problems too: the first error names them all, the file's included.
      throw error;
    }
    warning =
      `${(error as Error).message.replace(/^Invalid configuration: /, '')}; ` +
      `using the policy the running stack keeps in force (${documentDigest(inForce)})`;
  }
  const sealingKey = await readSealingKey(info.sealingKeyFile as string);
  return {
    ...(warning === undefined ? {} : { warning }),
    info,
    settings,
    vendUrl:
      settings.portGiven && settings.port !== 0
        ? `http://127.0.0.1:${settings.port}`
        : info.functionUrl,
    dynamodbEndpoint: settings.dynamodbEndpoint ?? info.dynamodbEndpoint,
    secretsDir: resolve(cwd, settings.localSecretsDir),
    sealingKey,
  };
}

/**
 * The policy text the running stack keeps in force, when `error` is the
 * policy file's (an invalid edit, or the file gone) and the stack can say.
 */
async function policyInForce(
  error: unknown,
  at: {
    readonly env: Env;
    readonly effective: Env;
    readonly cwd: string;
    readonly info: StackInfo;
  },
  fetchImpl: typeof fetch,
): Promise<string | undefined> {
  const { env, effective, cwd, info } = at;
  const file = effective.ACCESS_POLICY_FILE;
  // Only the stack's own file: a policy the operator names (another file, or
  // ACCESS_POLICY beside it) is theirs to fix, never replaced by the stack's.
  if (
    !(error instanceof ConfigError) ||
    info.control === undefined ||
    info.accessPolicyFile === undefined ||
    file === undefined ||
    resolve(cwd, file) !== info.accessPolicyFile ||
    (env.ACCESS_POLICY ?? '') !== ''
  ) {
    return undefined;
  }
  return askStackForPolicy(info.control, fetchImpl);
}

/**
 * Fails with `stack_not_running` unless something answers HTTP at the vend
 * URL: a stack file left by a stack that did not stop cleanly names a dead
 * DynamoDB endpoint and a sealing key nobody uses.
 */
export async function checkStackRunning(
  target: Pick<LocalAdminTarget, 'vendUrl' | 'info'>,
  fetchImpl: typeof fetch = globalThis.fetch,
): Promise<void> {
  const { vendUrl, info } = target;
  const probe = { functionUrl: vendUrl, region: info.region, identity: info.identity };
  if (!(await stackAnswers(probe, 3000, fetchImpl))) {
    throw new LocalAdminError(
      'stack_not_running',
      `no local stack answers at ${vendUrl}: start it with npm start ` +
        `(${DEFAULT_STACK_FILE} may be left over from a stack that did not stop cleanly)`,
    );
  }
}

export interface LocalAdmin {
  readonly run: (event: unknown) => Promise<AdminResult>;
  close(): void;
}

/** The admin core over the stack's table, sealing key, provider and vend URL. */
export function createLocalAdmin(
  target: LocalAdminTarget,
  deps: { readonly clock: Clock; readonly logger: CoreLogger },
): LocalAdmin {
  const { settings, info } = target;
  const dynamodb = localTableClient(target.dynamodbEndpoint, settings.region);
  const store = new DynamoDbTokenStore(dynamodb, settings.vend.tableName);
  const jobs = new DynamoDbKeyJobStore(dynamodb, settings.vend.tableName);
  const sealer = new AesGcmSealer(target.sealingKey);
  const { externalProvider } = settings;
  const policy = localPolicyProvider(settings.policy, deps);
  // The same provider and credentials as the stack (version 'local' as there),
  // so a token minted here is current for the stack's vend path.
  const providerUrl = externalProvider?.baseUrl ?? info.providerUrl;
  const runtime = createVendRuntime({
    store,
    sealer,
    credentials: new StaticCredentials(
      externalProvider
        ? { key: externalProvider.key, secret: externalProvider.secret, version: 'local' }
        : { ...DEMO_PROVIDER_CREDENTIALS, version: 'local' },
    ),
    provider: { baseUrl: providerUrl, unscopedScopeMode: settings.vend.unscopedScopeMode },
    policy,
    tokenConfig: { refreshAheadSeconds: settings.vend.refreshAheadSeconds },
    logger: deps.logger,
    clock: deps.clock,
  });
  // The job reaches the vend URL as any caller would: signed as the first local identity.
  const identity = settings.identities[0] as LocalIdentity;
  const job = createKeyIssuingJob(
    {
      store: jobs,
      vault: new FileKeyVault(target.secretsDir),
      sealer,
      tokens: new TokenVendingClient({
        url: target.vendUrl,
        region: settings.region,
        credentials: {
          accessKeyId: identity.accessKeyId,
          secretAccessKey: identity.secretAccessKey,
          ...(identity.sessionToken === undefined ? {} : { sessionToken: identity.sessionToken }),
        },
      }),
      logger: deps.logger,
      clock: deps.clock,
    },
    {
      providerBaseUrl: providerUrl,
      // The policy document's ids when it lists them, as in AWS.
      businessApplicationIds: async () =>
        (await policy.current()).policy.keyIssuingIds ?? settings.keyIssuing.businessApplicationIds,
      ...(settings.keyIssuing.requestBody === undefined
        ? {}
        : { requestBody: settings.keyIssuing.requestBody }),
    },
  );
  const run = createAdmin({
    store,
    jobs: new DynamoDbKeyJobIndex(dynamodb, settings.vend.tableName),
    refresh: (scope) => forceRefresh(runtime.tokens, scope),
    issueKeys: (event) => job.handle(event),
    policy,
    clearPendingKey: (request) => job.clearPendingKey({ action: 'clear-pending-key', ...request }),
    inUseWindowSeconds: settings.inUseWindowSeconds,
    clock: deps.clock,
    logger: deps.logger,
  });
  return { run, close: () => dynamodb.destroy() };
}
