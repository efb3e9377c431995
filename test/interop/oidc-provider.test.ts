/**
 * Interop with an OAuth server no one here wrote: `oidc-provider` configured
 * for client_credentials with client_secret_basic, its token endpoint moved
 * to /oauth/token with `routes`, on loopback. Our provider client obtains
 * tokens from it (its opaque tokens are base64url, a valid RFC 6750
 * b64token), and the token service stores and refreshes them by the
 * `expires_in` it returns (600 s by default), not an assumed 7200.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { StaticCredentials } from '../../functions/adapters/credentials.js';
import { UpstreamCredentialsRejectedError, UpstreamError } from '../../functions/core/errors.js';
import { type ProviderClientConfig, requestToken } from '../../functions/core/provider-client.js';
import { TokenService } from '../../functions/core/token-service.js';
import { TestClock } from '../support/clock.js';
import { MemoryTokenStore } from '../support/memory-store.js';
import { SHARED_SEALER } from '../support/vend-harness.js';

const CLIENT = { key: 'interop-client', secret: 'interop-client-secret-value', version: 'v1' };
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

let server: Server;
let config: ProviderClientConfig;
/** Token requests sent to oidc-provider. */
let tokenRequests = 0;
let quieted: Array<{ mockRestore(): void }> = [];

beforeAll(async () => {
  server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // Its notices (Node 20 is below its preferred LTS, development keys and
  // store, the default ClientCredentials ttl we mean to rely on) are expected:
  // silenced while it runs.
  const quiet = [vi.spyOn(console, 'warn'), vi.spyOn(console, 'info')].map((spy) =>
    spy.mockImplementation(() => undefined),
  );
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: CLIENT.key,
        client_secret: CLIENT.secret,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        token_endpoint_auth_method: 'client_secret_basic',
        scope: 'ba_demo_1 ba_demo_2',
      },
    ],
    scopes: ['ba_demo_1', 'ba_demo_2'],
    features: { clientCredentials: { enabled: true }, devInteractions: { enabled: false } },
    routes: { token: '/oauth/token' },
  });
  server.on('request', provider.callback());
  quieted = quiet;
  config = { baseUrl: issuer, unscopedScopeMode: 'omit', timeoutMs: 2000 };
});

afterAll(async () => {
  for (const spy of quieted) spy.mockRestore();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const countingFetch: typeof fetch = (input, init) => {
  tokenRequests++;
  return fetch(input, init);
};
const deps = (clock = new TestClock({ virtualSleep: true })) => ({
  fetch: countingFetch,
  clock,
  random: () => 0.5,
});

describe('the provider client against oidc-provider', () => {
  it('obtains a scoped token with client_secret_basic at /oauth/token: a b64token, 600 s, the scope echoed', async () => {
    const grant = await requestToken(deps(), config, CLIENT, 'ba_demo_1');

    expect(grant.tokenType).toBe('Bearer');
    expect(grant.accessToken).toMatch(B64TOKEN);
    expect(grant.expiresIn).toBe(600);
    expect(grant.scope).toBe('ba_demo_1');
  });

  it('obtains an unscoped token with scope omitted: no scope echoed, none recorded', async () => {
    const grant = await requestToken(deps(), config, CLIENT, undefined);

    expect(grant.accessToken).toMatch(B64TOKEN);
    expect(grant.expiresIn).toBe(600);
    expect(grant.scope).toBeUndefined();
  });

  it('maps a wrong secret (its 401 invalid_client) to upstream_credentials_rejected', async () => {
    await expect(
      requestToken(deps(), config, { ...CLIENT, secret: 'wrong' }, 'ba_demo_1'),
    ).rejects.toBeInstanceOf(UpstreamCredentialsRejectedError);
  });

  it('refuses the token it grants for a scope it does not know: no scope echoed is upstream_error', async () => {
    // oidc-provider drops unknown scopes and answers 200 with no `scope` field;
    // that token carries no scope and must never be cached as ba_unknown's.
    await expect(requestToken(deps(), config, CLIENT, 'ba_unknown')).rejects.toBeInstanceOf(
      UpstreamError,
    );
  });
});

describe('the token service over oidc-provider', () => {
  it('stores expires_at = issued_at + 600 and refreshes by that lifetime, not 7200', async () => {
    // Prepare
    const clock = new TestClock({ virtualSleep: true });
    const store = new MemoryTokenStore();
    const service = new TokenService(
      {
        store,
        sealer: SHARED_SEALER,
        credentials: new StaticCredentials(CLIENT),
        mint: (credentials, scope, deadlineMs) =>
          requestToken(deps(clock), config, credentials, scope, deadlineMs),
        clock,
        random: () => 0.5,
        logger: { info: vi.fn(), warn: vi.fn(), error: vi.fn() },
        instanceId: 'interop',
      },
      { refreshAheadSeconds: 900 },
    );
    const before = tokenRequests;

    // Act
    const first = await service.getToken('ba_demo_1', 0);
    const stored = store.items.get('TOKEN#ba_demo_1');
    clock.advance(200);
    const cached = await service.getToken('ba_demo_1', 0); // 400 s left: still fresh
    clock.advance(110);
    const refreshed = await service.getToken('ba_demo_1', 0); // 290 s left: past half its life

    // Assess
    expect(first.token.expiresAt - first.token.issuedAt).toBe(600);
    expect(stored?.token?.expiresAt).toBe(first.token.issuedAt + 600);
    expect(stored?.token?.issuedAt).toBe(first.token.issuedAt);
    expect(cached.token.accessToken).toBe(first.token.accessToken);
    // The refresh-ahead window is capped at half the lifetime (300 s), so the
    // second mint happens 310 s in, long before an assumed 7200 s would.
    expect(refreshed.token.accessToken).not.toBe(first.token.accessToken);
    expect(refreshed.outcome.refreshed).toBe(true);
    expect(refreshed.token.expiresAt - refreshed.token.issuedAt).toBe(600);
    expect(tokenRequests - before).toBe(2);
  });
});
