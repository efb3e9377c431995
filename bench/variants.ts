/**
 * The four ways of vending compared: the product's token service, and three
 * naive baselines written here. Every one is served through the product's own
 * vend app (routing, validation, access policy, audit line), so the only
 * difference is how a token is found or minted.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { SecretsManagerCredentials } from '../functions/adapters/credentials.js';
import { DynamoDbTokenStore } from '../functions/adapters/dynamodb-token-store.js';
import { AesGcmSealer } from '../functions/adapters/sealers.js';
import type { Clock } from '../functions/core/clock.js';
import { epochSeconds } from '../functions/core/clock.js';
import { isServable } from '../functions/core/freshness.js';
import { tokenKey } from '../functions/core/item-keys.js';
import { MemoryTokenCache, SingleFlight } from '../functions/core/memory-cache.js';
import { mintToken } from '../functions/core/mint-token.js';
import { fixedPolicy } from '../functions/core/policy-source.js';
import type { CredentialsSource, Token } from '../functions/core/ports.js';
import { type ProviderClientConfig, requestToken } from '../functions/core/provider-client.js';
import type { TokenService, VendResult } from '../functions/core/token-service.js';
import { outcome } from '../functions/core/token-service-types.js';
import {
  runScheduledRefresh,
  scheduledRefreshDueWithin,
} from '../functions/refresh/scheduled-refresh.js';
import { createVendApp, outcomeLabel, type VendApp } from '../functions/vend-token/app.js';
import { createVendRuntime } from '../functions/vend-token/runtime.js';
import { DEMO_PROVIDER_CREDENTIALS, type ProviderSimulator } from '../local/provider-simulator.js';
import { urlEvent } from '../test/support/vend-harness.js';
import { REFRESH_AHEAD_SECONDS, REFRESH_INTERVAL_SECONDS, type VariantName } from './names.js';
import {
  CALLER_ARN,
  type CountingClient,
  countingClient,
  discardingLogger,
  POLICY,
  SCOPES,
  type World,
} from './world.js';

/** How one vend was served, as the vend app's audit line labels it; `error:<code>` on failure. */
const served = new AsyncLocalStorage<{ label: string }>();

type TokenGetter = Pick<TokenService, 'getToken'>;

/** Notes each result's outcome label for the vend it belongs to. */
function recording(tokens: TokenGetter): TokenGetter {
  return {
    getToken: async (scope, minTtl) => {
      const result = await tokens.getToken(scope, minTtl);
      const slot = served.getStore();
      if (slot) slot.label = outcomeLabel(result.outcome);
      return result;
    },
  };
}

/** One simulated Lambda instance of a variant. */
export interface BenchInstance {
  readonly app: VendApp;
  /** Drops the instance's in-memory tokens, so the next vend reads DynamoDB (L2). */
  forget(): void;
}

export interface VendRecord {
  readonly status: number;
  /** `l1`, `l2`, `provider`, `refreshed`, `waited`, `degraded`, or `error:<code>`. */
  readonly label: string;
  readonly ms: number;
  readonly accessToken?: string;
  readonly expiresAt?: number;
  readonly scope?: string;
}

/** One vend through an instance's app, timed with the high-resolution clock. */
export async function timedVend(
  instance: BenchInstance,
  scope: string,
  minTtl = 300,
): Promise<VendRecord> {
  const slot = { label: 'error:unknown' };
  const event = urlEvent({ query: `min_ttl=${minTtl}&scope=${scope}`, arn: CALLER_ARN });
  const started = performance.now();
  const result = await served.run(slot, () => instance.app(event));
  const ms = performance.now() - started;
  const answer = typeof result === 'string' ? {} : result;
  const status = answer.statusCode ?? 200;
  const body = JSON.parse(answer.body ?? '{}') as Record<string, unknown>;
  if (status !== 200) return { status, label: `error:${String(body.code)}`, ms };
  return {
    status,
    label: slot.label,
    ms,
    accessToken: body.access_token as string,
    expiresAt: body.expires_at as number,
    scope: body.scope as string,
  };
}

/** Labels of vends that waited on the provider: minted themselves, or waited for another's mint. */
export const WAITED_ON_PROVIDER = new Set(['provider', 'refreshed', 'waited']);

export interface VariantOptions {
  readonly name: VariantName;
  readonly world: Pick<World, 'endpoint' | 'sockets'>;
  readonly table: string;
  readonly sim: ProviderSimulator;
  readonly clock: Clock;
}

/** A variant set up for one workload run: its instances share its table, clients and clock. */
export interface Variant {
  readonly name: VariantName;
  instance(): BenchInstance;
  /** DynamoDB calls sent by the vend instances so far. */
  vendDynamoCalls(): number;
  /** Lease waits and the polls (GetItem) they made; only the product waits on a lease. */
  readonly leaseWaits?: () => { readonly waits: number; readonly polls: number };
  /** One run of the scheduled refresh; only the product has one. */
  readonly scheduledRefresh?: () => Promise<void>;
}

let secretsStubbed = false;

/**
 * Secrets Manager has no local emulator: every instance reads the secret
 * through the real adapter (Powertools cache included) from a stubbed client.
 */
function stubSecretsManager(): void {
  if (secretsStubbed) return;
  secretsStubbed = true;
  mockClient(SecretsManagerClient)
    .on(GetSecretValueCommand)
    .resolves({ SecretString: JSON.stringify(DEMO_PROVIDER_CREDENTIALS), VersionId: 'v1' });
}

const sealer = new AesGcmSealer();

export function createVariant(options: VariantOptions): Variant {
  stubSecretsManager();
  const { clock } = options;
  const logger = discardingLogger();
  // The simulated instances share one DynamoDB client (50 sockets): on one
  // machine, 50 clients' connection set-up would be measured instead of the cache.
  const shared = countingClient(options.world);
  const vendDb = (): CountingClient => shared;
  const provider: ProviderClientConfig = { baseUrl: options.sim.url, unscopedScopeMode: 'omit' };
  const credentials = (): CredentialsSource =>
    new SecretsManagerCredentials({
      client: new SecretsManagerClient({ region: 'us-east-1' }),
      secretId: 'bench/provider',
      logger,
      now: () => clock.now(),
    });
  const app = (tokens: TokenGetter): VendApp =>
    createVendApp({ tokens: recording(tokens), policy: fixedPolicy(POLICY), logger, clock });
  const deps = (source: CredentialsSource) => ({
    credentials: source,
    clock,
    logger,
    mint: (
      creds: Parameters<typeof requestToken>[2],
      scope: string | undefined,
      deadline: number,
    ) => requestToken({ fetch, clock, random: Math.random }, provider, creds, scope, deadline),
  });
  const waits = { waits: 0, polls: 0 };
  const count = (metric: string) => {
    if (metric === 'LeaseWaits') waits.waits++;
    if (metric === 'LeaseWaitPolls') waits.polls++;
  };
  const runtime = (db: CountingClient = vendDb()) =>
    createVendRuntime({
      count,
      store: new DynamoDbTokenStore(db.client, options.table),
      sealer,
      credentials: credentials(),
      provider,
      policy: fixedPolicy(POLICY),
      logger,
      clock,
      instanceId: randomUUID(),
      tokenConfig: { refreshAheadSeconds: REFRESH_AHEAD_SECONDS },
    });

  const base = {
    name: options.name,
    vendDynamoCalls: () => shared.total(),
  };
  switch (options.name) {
    case 'ours': {
      const scheduleDb = countingClient(options.world);
      const scheduler = runtime(scheduleDb);
      const store = new DynamoDbTokenStore(scheduleDb.client, options.table);
      return {
        ...base,
        leaseWaits: () => ({ ...waits }),
        instance: () => {
          const rt = runtime();
          return { app: app(rt.tokens), forget: () => rt.tokens.forget() };
        },
        scheduledRefresh: async () => {
          await runScheduledRefresh(
            { tokens: scheduler.tokens, store, clock, logger },
            {
              inUseWindowSeconds: 3600,
              dueWithinSeconds: scheduledRefreshDueWithin(REFRESH_INTERVAL_SECONDS),
              scopes: new Set(SCOPES),
            },
          );
        },
      };
    }
    case 'no-cache':
      return {
        ...base,
        instance: () => {
          const mint = deps(credentials());
          return {
            app: app({
              getToken: async (scope) => ({
                token: await mintToken(mint, scope, await mint.credentials.get(), Infinity),
                outcome: outcome('provider'),
              }),
            }),
            forget: () => undefined,
          };
        },
      };
    case 'memory-only':
      return {
        ...base,
        instance: () => {
          const mint = deps(credentials());
          const tokens = new Map<string, Token>();
          const flights = new SingleFlight<VendResult>();
          const getToken = async (scope: string | undefined, minTtl: number) => {
            const key = tokenKey(scope);
            const cached = tokens.get(key);
            if (cached && isServable(cached, minTtl, epochSeconds(clock))) {
              return { token: cached, outcome: outcome('l1') };
            }
            return flights.run(key, async () => {
              const token = await mintToken(mint, scope, await mint.credentials.get(), Infinity);
              tokens.set(key, token);
              return { token, outcome: outcome('provider') };
            }).promise;
          };
          return { app: app({ getToken }), forget: () => tokens.clear() };
        },
      };
    case 'dynamodb-no-lease':
      return {
        ...base,
        instance: () => noLeaseInstance(deps(credentials()), vendDb(), options.table, clock, app),
      };
  }
}

/**
 * The DynamoDB cache without a lease: the product's L1 (60 s) in front of the
 * same item format, but a caller that finds no servable token mints and
 * overwrites the item unconditionally, as a first cache usually does.
 */
function noLeaseInstance(
  mint: Parameters<typeof mintToken>[0],
  db: CountingClient,
  table: string,
  clock: Clock,
  app: (tokens: TokenGetter) => VendApp,
): BenchInstance {
  const store = new DynamoDbTokenStore(db.client, table);
  const l1 = new MemoryTokenCache();
  const flights = new SingleFlight<VendResult>();
  const now = () => epochSeconds(clock);
  const lookup = async (key: string, scope: string | undefined, minTtl: number) => {
    const item = await store.get(key);
    if (item?.token && isServable(item.token, minTtl, now())) {
      const { sealed, ...meta } = item.token;
      const token: Token = { ...meta, accessToken: await sealer.unseal(sealed, key) };
      l1.set(key, token, now());
      return { token, outcome: outcome('l2') };
    }
    const token = await mintToken(mint, scope, await mint.credentials.get(), Infinity);
    const sealed = await sealer.seal(token.accessToken, key);
    await db.client.send(
      new PutItemCommand({
        TableName: table,
        Item: {
          pk: { S: key },
          sealed_token: { B: sealed },
          token_type: { S: token.tokenType },
          issued_at: { N: String(token.issuedAt) },
          expires_at: { N: String(token.expiresAt) },
          ttl: { N: String(token.expiresAt - 60) },
          credentials_version: { S: token.credentialsVersion },
          ...(token.scope === undefined ? {} : { scope: { S: token.scope } }),
        },
      }),
    );
    l1.set(key, token, now());
    return { token, outcome: outcome('provider') };
  };
  const getToken = async (scope: string | undefined, minTtl: number): Promise<VendResult> => {
    const key = tokenKey(scope);
    const cached = l1.get(key, now());
    if (cached && isServable(cached, minTtl, now()))
      return { token: cached, outcome: outcome('l1') };
    return flights.run(key, () => lookup(key, scope, minTtl)).promise;
  };
  return { app: app({ getToken }), forget: () => l1.clear() };
}
