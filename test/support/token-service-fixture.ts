import { vi } from 'vitest';
import { StaticCredentials } from '../../functions/adapters/credentials.js';
import { AesGcmSealer } from '../../functions/adapters/sealers.js';
import type { Clock } from '../../functions/core/clock.js';
import { CredentialsUnavailableError } from '../../functions/core/errors.js';
import type { CredentialsSource, ProviderCredentials } from '../../functions/core/ports.js';
import type { TokenGrant } from '../../functions/core/provider-client.js';
import {
  type Minter,
  TokenService,
  type TokenServiceConfig,
} from '../../functions/core/token-service.js';
import { TestClock } from './clock.js';
import { MemoryTokenStore } from './memory-store.js';

export const CREDS = { key: 'k', secret: 's', version: 'v1' };

/** A provider fake: counts mints, returns numbered tokens, can fail. */
export function fakeProvider(expiresIn = 7200) {
  const state = {
    mints: 0,
    fail: undefined as Error | undefined,
    seen: [] as ProviderCredentials[],
  };
  const mint: Minter = async (credentials, scope): Promise<TokenGrant> => {
    state.mints++;
    state.seen.push(credentials);
    if (state.fail) throw state.fail;
    return {
      accessToken: `tok-${state.mints}`,
      tokenType: 'Bearer',
      expiresIn,
      ...(scope === undefined ? {} : { scope }),
    };
  };
  return { state, mint };
}

export function setup(options: { config?: TokenServiceConfig; expiresIn?: number } = {}) {
  const clock = new TestClock({ virtualSleep: true, frozenAt: 1_800_000_000_500 });
  const store = new MemoryTokenStore();
  const sealer = new AesGcmSealer();
  const credentials = new StaticCredentials(CREDS);
  const provider = fakeProvider(options.expiresIn);
  const logger = { info: vi.fn(), warn: vi.fn(), error: vi.fn() };
  const instance = (
    id: string,
    source: CredentialsSource = credentials,
    mint = provider.mint,
    instanceClock: Clock = clock,
  ) =>
    new TokenService(
      {
        store,
        sealer,
        credentials: source,
        mint,
        clock: instanceClock,
        random: () => 0.5,
        logger,
        instanceId: id,
      },
      options.config,
    );
  return {
    clock,
    store,
    sealer,
    credentials,
    provider,
    logger,
    instance,
    a: instance('a'),
    b: instance('b'),
  };
}

/**
 * A credentials source that behaves like the Secrets Manager adapter of one
 * instance: plain reads return its cached version; a forced re-read returns
 * the secret's current version and caches it, or throws while `down`.
 */
export class SecretCache implements CredentialsSource {
  cached: ProviderCredentials | undefined;
  current: ProviderCredentials;
  down = false;
  forcedReads = 0;

  constructor(current: ProviderCredentials, cached: ProviderCredentials | undefined = current) {
    this.current = current;
    this.cached = cached;
  }

  async get(options?: { forceRefresh?: boolean }): Promise<ProviderCredentials> {
    if (options?.forceRefresh) this.forcedReads++;
    if (options?.forceRefresh || !this.cached) {
      if (this.down)
        throw new CredentialsUnavailableError('The credentials secret could not be read.');
      this.cached = this.current;
    }
    return this.cached;
  }
}

/**
 * Stores a token as another instance would: under its lease, sealed, then
 * released. `heldBy`: the instance already holds the lease (it minted under it).
 */
export async function storeToken(
  t: ReturnType<typeof setup>,
  scope: string,
  token: { accessToken: string; version: string; secondsLeft: number; lifetime?: number },
  heldBy?: string,
): Promise<void> {
  const key = `TOKEN#${scope}`;
  const now = Math.floor(t.clock.now() / 1000);
  const lifetime = token.lifetime ?? 7200;
  const owner = heldBy ?? `writer-${token.accessToken}`;
  if (heldBy === undefined) await t.store.tryAcquireLease(key, owner, 0, 1);
  const sealed = await t.sealer.seal(token.accessToken, key);
  await t.store.putToken(
    key,
    {
      tokenType: 'Bearer',
      scope,
      issuedAt: now + token.secondsLeft - lifetime,
      expiresAt: now + token.secondsLeft,
      credentialsVersion: token.version,
      sealed,
    },
    owner,
  );
}
