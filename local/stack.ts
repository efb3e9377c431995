import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { providerKeyProblem, StaticCredentials } from '../functions/adapters/credentials.js';
import { DynamoDbTokenStore } from '../functions/adapters/dynamodb-token-store.js';
import { AesGcmSealer } from '../functions/adapters/sealers.js';
import { type Env, EnvReader, readVendSettings } from '../functions/core/config.js';
import { createVendRuntime, type VendRuntime } from '../functions/vend-token/runtime.js';
import { startDynamoDbLocal } from './dynamodb-local.js';
import { startLocalFunctionUrl } from './function-url.js';
import {
  defaultAccessPolicy,
  type LocalIdentity,
  readLocalIdentities,
} from './local-identities.js';
import {
  DEFAULT_ALLOWED_SCOPES,
  DEMO_PROVIDER_CREDENTIALS,
  type ProviderSimulator,
  startProviderSimulator,
} from './provider-simulator.js';
import { ensureTable, LOCAL_AWS_CREDENTIALS } from './table.js';

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
  /** The policy's configured scopes. */
  readonly scopes: readonly string[];
  readonly identity: LocalIdentity;
}

export interface LocalStack {
  readonly info: StackInfo;
  readonly runtime: VendRuntime;
  /** The in-process simulator, when the stack started one. */
  readonly simulator?: ProviderSimulator;
  stop(): Promise<void>;
}

/**
 * Starts the local stack of SPEC section 8 on loopback: DynamoDB Local (unless
 * DYNAMODB_ENDPOINT), the provider simulator (unless PROVIDER_BASE_URL), and a
 * SigV4-checking Function URL in front of the real vend handler.
 */
export async function startLocalStack(
  env: Env,
  options: { stackFile?: string | null; logger?: Logger } = {},
): Promise<LocalStack> {
  const reader = new EnvReader(env);
  const port = reader.integer('PORT', 8787, 0, 65535);
  const region = reader.optional('AWS_REGION', 'us-east-1');
  const identities = readLocalIdentities(reader, env);
  const externalProvider = env.PROVIDER_BASE_URL;
  if (externalProvider && (!env.PROVIDER_KEY || !env.PROVIDER_SECRET)) {
    reader.problem('PROVIDER_KEY and PROVIDER_SECRET are required when PROVIDER_BASE_URL is set');
  }
  const keyProblem =
    externalProvider && env.PROVIDER_KEY ? providerKeyProblem(env.PROVIDER_KEY) : undefined;
  // The message names the variable only: the key itself is never echoed.
  if (keyProblem) reader.problem(`PROVIDER_KEY is unusable: ${keyProblem}`);
  if (externalProvider && !env.ACCESS_POLICY) {
    // The default policy lists the simulator's scopes, which a real provider does not know.
    reader.problem(
      'ACCESS_POLICY is required when PROVIDER_BASE_URL is set (its scopes are sent upstream)',
    );
  }
  const settings = readVendSettings(
    new EnvReader({
      ...env,
      ACCESS_POLICY:
        env.ACCESS_POLICY || defaultAccessPolicy(reader, identities, DEFAULT_ALLOWED_SCOPES),
      PROVIDER_BASE_URL: externalProvider || 'http://127.0.0.1',
    }),
    { tableName: 'token-vending-local' },
  );
  reader.done();

  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const fn of stops.reverse()) await fn().catch(() => undefined);
  };
  try {
    let dynamodbEndpoint = env.DYNAMODB_ENDPOINT;
    if (!dynamodbEndpoint) {
      const ddb = await startDynamoDbLocal();
      stops.push(() => ddb.stop());
      dynamodbEndpoint = ddb.endpoint;
    }
    const client = new DynamoDBClient({
      endpoint: dynamodbEndpoint,
      region,
      credentials: LOCAL_AWS_CREDENTIALS,
      maxAttempts: 2,
    });
    stops.push(async () => client.destroy());
    await ensureTable(client, settings.tableName);

    let simulator: ProviderSimulator | undefined;
    if (!externalProvider) {
      simulator = await startProviderSimulator({ unscopedMode: 'either' });
      const sim = simulator;
      stops.push(() => sim.close());
    }
    const providerUrl = externalProvider || (simulator as ProviderSimulator).url;
    const credentials = new StaticCredentials(
      externalProvider
        ? {
            key: env.PROVIDER_KEY as string,
            secret: env.PROVIDER_SECRET as string,
            version: 'local',
          }
        : { ...DEMO_PROVIDER_CREDENTIALS, version: 'local' },
    );
    const logger = options.logger ?? new Logger({ serviceName: 'token-vending-local' });
    const runtime = createVendRuntime({
      store: new DynamoDbTokenStore(client, settings.tableName),
      sealer: new AesGcmSealer(),
      credentials,
      provider: { baseUrl: providerUrl, unscopedScopeMode: settings.unscopedScopeMode },
      policy: settings.policy,
      tokenConfig: { refreshAheadSeconds: settings.refreshAheadSeconds },
      logger,
    });
    const url = await startLocalFunctionUrl({ handler: runtime.app, identities, region, port });
    stops.push(() => url.close());

    const info: StackInfo = {
      functionUrl: url.url,
      region,
      providerUrl,
      providerSimulated: simulator !== undefined,
      dynamodbEndpoint,
      tableName: settings.tableName,
      unscopedScopeMode: settings.unscopedScopeMode,
      scopes: [...settings.policy.scopes],
      identity: identities[0] as LocalIdentity,
    };
    const stackFile = options.stackFile === undefined ? DEFAULT_STACK_FILE : options.stackFile;
    if (stackFile !== null) {
      await mkdir(dirname(stackFile), { recursive: true });
      await writeFile(stackFile, `${JSON.stringify(info, null, 2)}\n`, { mode: 0o600 });
      await chmod(stackFile, 0o600);
      stops.unshift(() => rm(stackFile, { force: true }));
    }
    return { info, runtime, ...(simulator ? { simulator } : {}), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** One shell word, single-quoted. */
const shellQuote = (value: string): string => `'${value.replace(/'/g, `'\\''`)}'`;

/** A curl command that works against the stack (parameters sorted and percent-encoded, as curl 7.88 signs them as typed). */
export function curlCommand(
  info: StackInfo,
  query = info.scopes[0] === undefined
    ? 'min_ttl=300'
    : `min_ttl=300&scope=${encodeURIComponent(info.scopes[0])}`,
): string {
  const { identity } = info;
  const token =
    identity.sessionToken === undefined
      ? ''
      : ` -H ${shellQuote(`x-amz-security-token: ${identity.sessionToken}`)}`;
  return `curl -s --aws-sigv4 "aws:amz:${info.region}:lambda" --user "${identity.accessKeyId}:${identity.secretAccessKey}"${token} "${info.functionUrl}/token?${query}"`;
}
