import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { VEND_CALL_LIMITS } from '../functions/adapters/aws-client-options.js';
import { StaticCredentials } from '../functions/adapters/credentials.js';
import { DynamoDbTokenStore } from '../functions/adapters/dynamodb-token-store.js';
import { AesGcmSealer } from '../functions/adapters/sealers.js';
import { systemClock } from '../functions/core/clock.js';
import type { Env } from '../functions/core/config.js';
import { describe } from '../functions/core/describe-error.js';
import { ConfigError } from '../functions/core/errors.js';
import {
  runScheduledRefresh,
  scheduledRefreshDueWithin,
} from '../functions/refresh/scheduled-refresh.js';
import { createVendRuntime, type VendRuntime } from '../functions/vend-token/runtime.js';
import { startDynamoDbLocal } from './dynamodb-local.js';
import { startLocalFunctionUrl } from './function-url.js';
import { createInstancePool, type InstancePool } from './instance-pool.js';
import { DEMO_IDENTITY, type LocalIdentity } from './local-identities.js';
import { localPolicy } from './policy-file.js';
import {
  DEMO_PROVIDER_CREDENTIALS,
  type ProviderSimulator,
  startProviderSimulator,
} from './provider-simulator.js';
import { type RefreshTimers, startRefreshTimer } from './refresh-timer.js';
import { newSealingKey, SEALING_KEY_FILE_NAME, writeSealingKey } from './sealing-key.js';
import { readLocalSettings, readStackInfo, stackAnswers } from './stack-config.js';
import { startStackControl } from './stack-control.js';
import { ensureTable, localTableClient } from './table.js';

export const DEFAULT_STACK_FILE = '.local/stack.json';

/** What `npm start` started; written to `.local/stack.json`. */
export interface StackInfo {
  readonly functionUrl: string;
  readonly region: string;
  readonly providerUrl: string;
  readonly providerSimulated: boolean;
  readonly dynamodbEndpoint: string;
  readonly tableName: string;
  readonly unscopedScopeMode: string;
  /** The policy's configured scopes at start. */
  readonly scopes: readonly string[];
  /** `ACCESS_POLICY_FILE` (absolute), which `npm run admin` reads too. */
  readonly accessPolicyFile?: string;
  /**
   * Without a policy file, the policy the stack serves (`ACCESS_POLICY`, or
   * the demo policy), so `npm run admin` judges and reports the same policy
   * (its status shows the same version as the vend URL's `GET /grants`).
   */
  readonly accessPolicy?: string;
  readonly identity: LocalIdentity;
  /**
   * The AES-256-GCM key sealing cached tokens (base64, mode 0600, beside the
   * stack file), made at each start; `npm run admin` seals and unseals with it.
   * Absent when the stack wrote no stack file.
   */
  readonly sealingKeyFile?: string;
  /** Where the key-issuing job writes keys (absolute `LOCAL_SECRETS_DIR`). */
  readonly localSecretsDir: string;
  /** `KEY_ISSUE_BUSINESS_APPLICATION_IDS` and `KEY_ISSUE_REQUEST_BODY`, for `npm run admin`. */
  readonly keyIssuing: {
    readonly businessApplicationIds: readonly string[];
    readonly requestBody?: string;
  };
  readonly refreshAheadSeconds: number;
  readonly refreshIntervalSeconds: number;
  readonly inUseWindowSeconds: number;
  /** `LOCAL_INSTANCES`: vend handler instances behind the local URL. */
  readonly instances?: number;
  /**
   * The stack's control endpoint (stack-control.ts): `npm run admin` asks the
   * instances to forget a scope it invalidated or refreshed.
   */
  readonly control?: { readonly url: string; readonly token: string };
}

export interface LocalStack {
  readonly info: StackInfo;
  /**
   * A query the first identity is granted under the access policy (its first
   * granted scope, else the unscoped token); undefined when it is granted nothing.
   */
  readonly grantedQuery?: string;
  /** The first instance (the scheduled refresh runs through it). */
  readonly runtime: VendRuntime;
  /** Every vend handler instance (`LOCAL_INSTANCES`). */
  readonly pool: InstancePool;
  /** The in-process simulator, when the stack started one. */
  readonly simulator?: ProviderSimulator;
  stop(): Promise<void>;
}

/**
 * Starts the local stack (docs/local-stack.md) on loopback: DynamoDB Local (unless
 * DYNAMODB_ENDPOINT), the provider simulator (unless PROVIDER_BASE_URL), a
 * SigV4-checking Function URL in front of the real vend handler, and the
 * scheduled refresh on its own timer (`options.timers`, real ones by default).
 * Writes the stack file and, beside it, the sealing key `npm run admin` shares;
 * `stop` removes both.
 */
/**
 * Refuses to start over the stack file of a stack that still answers: the
 * new stack would replace its file and sealing key (and remove them when it
 * stopped), so `npm run admin` could no longer reach the running one. A file
 * left by a stack that did not stop cleanly is replaced.
 */
async function refuseIfRunning(stackFile: string): Promise<void> {
  // No stack file, or one no current stack wrote: nothing runs from it.
  const info = await readStackInfo(stackFile).catch(() => undefined);
  if (info && (await stackAnswers(info, 1000))) {
    throw new ConfigError(
      `Another local stack started from this directory is running at ${info.functionUrl} ` +
        `(${stackFile}). Stop it first, or start this one from another directory.`,
    );
  }
}

export async function startLocalStack(
  env: Env,
  options: { stackFile?: string | null; logger?: Logger; timers?: RefreshTimers } = {},
): Promise<LocalStack> {
  const settings = readLocalSettings(env);
  const { vend, externalProvider, identities, region } = settings;
  const logger = options.logger ?? new Logger({ serviceName: 'token-vending-local' });
  const { provider: policy, textInForce } = localPolicy(settings.policy, {
    clock: systemClock,
    logger,
  });
  const stackFile = options.stackFile === undefined ? DEFAULT_STACK_FILE : options.stackFile;
  if (stackFile !== null) await refuseIfRunning(stackFile);

  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const fn of stops.reverse()) await fn().catch(() => undefined);
  };
  try {
    let dynamodbEndpoint = settings.dynamodbEndpoint;
    if (!dynamodbEndpoint) {
      const ddb = await startDynamoDbLocal();
      stops.push(() => ddb.stop());
      dynamodbEndpoint = ddb.endpoint;
    }
    // Bounded as `npm run admin`'s: a DYNAMODB_ENDPOINT that accepts
    // connections but never answers fails the start with a message, rather than
    // hanging it where Ctrl-C only waits for it.
    const client = localTableClient(dynamodbEndpoint, region);
    stops.push(async () => client.destroy());
    await ensureTable(client, vend.tableName).catch((error: unknown) => {
      // A DynamoDB the operator named: say which variable led there.
      if (!settings.dynamodbEndpoint) throw error;
      const { name } = describe(error);
      throw new ConfigError(
        `DYNAMODB_ENDPOINT ${settings.dynamodbEndpoint} did not serve table ${vend.tableName} ` +
          `(${String(name)}${error instanceof Error ? `: ${error.message}` : ''}); ` +
          'is a DynamoDB running there?',
      );
    });

    let simulator: ProviderSimulator | undefined;
    if (!externalProvider) {
      simulator = await startProviderSimulator({ unscopedMode: 'either' });
      const sim = simulator;
      stops.push(() => sim.close());
    }
    const providerUrl = externalProvider?.baseUrl ?? (simulator as ProviderSimulator).url;
    const credentials = new StaticCredentials(
      externalProvider
        ? { key: externalProvider.key, secret: externalProvider.secret, version: 'local' }
        : { ...DEMO_PROVIDER_CREDENTIALS, version: 'local' },
    );
    const sealingKey = newSealingKey();
    // The vend instances' own client, bounded as in AWS (aws-runtime.ts): a
    // table that stops answering means degraded vends, not hung ones. Twice
    // AWS's 1 s an attempt: DynamoDB Local shares the machine's cores with
    // the stack and its callers, and a burst over many instances (whose
    // exactly-one-mint a timed-out call would break) can queue its calls
    // past a second. The client above only sets the table up.
    const vendClient = localTableClient(dynamodbEndpoint, region, {
      ...VEND_CALL_LIMITS,
      requestTimeoutMs: 2 * VEND_CALL_LIMITS.requestTimeoutMs,
    });
    stops.push(async () => vendClient.destroy());
    const store = new DynamoDbTokenStore(vendClient, vend.tableName);
    // Each instance its own memory (L1, flights, instance id); all share the
    // table and the sealing key, as Lambda's instances share DynamoDB and KMS.
    const sealer = new AesGcmSealer(sealingKey);
    const pool = createInstancePool(settings.instances, () =>
      createVendRuntime({
        store,
        sealer,
        credentials,
        provider: { baseUrl: providerUrl, unscopedScopeMode: vend.unscopedScopeMode },
        policy,
        tokenConfig: { refreshAheadSeconds: vend.refreshAheadSeconds },
        logger,
      }),
    );
    const runtime = pool.instances[0] as VendRuntime;
    const control = await startStackControl(pool, { policyInForce: textInForce });
    stops.push(() => control.close());
    const url = await startLocalFunctionUrl({
      handler: pool.handler,
      identities,
      region,
      port: settings.port,
      log: logger,
    });
    stops.push(() => url.close());

    // The scheduled refresh, as in AWS, on this stack's own timer.
    const refresh = startRefreshTimer(
      {
        run: async () =>
          runScheduledRefresh(
            { tokens: runtime.tokens, store, clock: systemClock, logger },
            {
              inUseWindowSeconds: settings.inUseWindowSeconds,
              dueWithinSeconds: scheduledRefreshDueWithin(settings.refreshIntervalSeconds),
              scopes: (await policy.current()).policy.scopes,
            },
          ),
        logger,
        ...(options.timers ? { timers: options.timers } : {}),
      },
      settings.refreshIntervalSeconds,
    );
    stops.push(() => refresh.stop());

    const sealingKeyFile =
      stackFile === null ? undefined : resolve(dirname(stackFile), SEALING_KEY_FILE_NAME);
    const info: StackInfo = {
      functionUrl: url.url,
      region,
      providerUrl,
      providerSimulated: simulator !== undefined,
      dynamodbEndpoint,
      tableName: vend.tableName,
      unscopedScopeMode: vend.unscopedScopeMode,
      scopes: [...settings.policy.policy.scopes],
      ...(settings.policy.kind === 'file'
        ? { accessPolicyFile: settings.policy.path }
        : { accessPolicy: settings.policy.text }),
      identity: identities[0] as LocalIdentity,
      ...(sealingKeyFile === undefined ? {} : { sealingKeyFile }),
      localSecretsDir: resolve(settings.localSecretsDir),
      keyIssuing: settings.keyIssuing,
      refreshAheadSeconds: vend.refreshAheadSeconds,
      refreshIntervalSeconds: settings.refreshIntervalSeconds,
      inUseWindowSeconds: settings.inUseWindowSeconds,
      instances: settings.instances,
      control: { url: control.url, token: control.token },
    };
    if (stackFile !== null && sealingKeyFile !== undefined) {
      await mkdir(dirname(stackFile), { recursive: true });
      // On stop the stack file goes before the key; on start the key is written
      // first: whoever finds the stack file finds the key it names.
      stops.unshift(() => rm(stackFile, { force: true }));
      stops.unshift(() => rm(sealingKeyFile, { force: true }));
      await writeSealingKey(sealingKeyFile, sealingKey);
      await writeFile(stackFile, `${JSON.stringify(info, null, 2)}\n`, { mode: 0o600 });
      await chmod(stackFile, 0o600);
    }
    const caller = info.identity.arn;
    const started = settings.policy.policy;
    const grantedScope = info.scopes.find((scope) => started.allows(caller, scope));
    const grantedQuery =
      grantedScope !== undefined || started.allows(caller, undefined)
        ? tokenQuery(grantedScope)
        : undefined;
    return {
      info,
      ...(grantedQuery === undefined ? {} : { grantedQuery }),
      runtime,
      pool,
      ...(simulator ? { simulator } : {}),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The query of a demo token request: `scope` given, or the unscoped token. */
const tokenQuery = (scope: string | undefined): string =>
  scope === undefined ? 'min_ttl=300' : `min_ttl=300&scope=${encodeURIComponent(scope)}`;

/** The built-in demo identity, as opposed to somebody's own that reuses its key id. */
export const isDemoIdentity = (identity: LocalIdentity): boolean =>
  identity.accessKeyId === DEMO_IDENTITY.accessKeyId &&
  identity.secretAccessKey === DEMO_IDENTITY.secretAccessKey &&
  identity.sessionToken === undefined;

/** Where a printed curl command takes a `LOCAL_IDENTITIES` secret from (never printed). */
export const SECRET_VARIABLES = {
  secretAccessKey: 'LOCAL_SECRET_ACCESS_KEY',
  sessionToken: 'LOCAL_SESSION_TOKEN',
} as const;

/**
 * A curl command that works against the stack (parameters sorted and
 * percent-encoded, as curl 7.88 signs them as typed). The demo identity's
 * secret is written out; an identity from `LOCAL_IDENTITIES` is somebody's own,
 * so its secret and session token are read from the shell variables in
 * SECRET_VARIABLES instead.
 */
export function curlCommand(info: StackInfo, query = tokenQuery(info.scopes[0])): string {
  const { identity } = info;
  const demo = isDemoIdentity(identity);
  const secret = demo ? identity.secretAccessKey : `$${SECRET_VARIABLES.secretAccessKey}`;
  const token =
    identity.sessionToken === undefined
      ? ''
      : ` -H "x-amz-security-token: $${SECRET_VARIABLES.sessionToken}"`;
  return `curl -s --aws-sigv4 "aws:amz:${info.region}:lambda" --user "${identity.accessKeyId}:${secret}"${token} "${info.functionUrl}/token?${query}"`;
}

/**
 * What `npm start` prints under "Try:": a curl command for a scope the first
 * identity is granted, saying so when it is granted nothing, and where the
 * command takes a `LOCAL_IDENTITIES` secret from.
 */
export function tryLines(stack: Pick<LocalStack, 'info' | 'grantedQuery'>): string[] {
  const { identity } = stack.info;
  const lines = [`  ${curlCommand(stack.info, stack.grantedQuery)}`];
  if (stack.grantedQuery === undefined) {
    lines.push(
      '  (the first identity is granted nothing under ACCESS_POLICY: this answers 403 access_denied)',
    );
  }
  if (!isDemoIdentity(identity)) {
    const variables = [
      SECRET_VARIABLES.secretAccessKey,
      ...(identity.sessionToken === undefined ? [] : [SECRET_VARIABLES.sessionToken]),
    ];
    lines.push(
      `  (LOCAL_IDENTITIES[0]'s secret is not printed: set ${variables.join(' and ')} to it first)`,
    );
  }
  lines.push(`  npm run admin -- '{"action":"status"}'`);
  return lines;
}
