import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  DEMO_PROVIDER_CREDENTIALS,
  type ProviderSimulator,
  startProviderSimulator,
} from '../../local/provider-simulator.js';

const FORM = 'application/x-www-form-urlencoded';
const { key: KEY, secret: SECRET } = DEMO_PROVIDER_CREDENTIALS;

let sim: ProviderSimulator;
let clockMs = Date.UTC(2030, 0, 1);

function basic(key = KEY, secret = SECRET): string {
  return `Basic ${Buffer.from(`${key}:${secret}`, 'utf8').toString('base64')}`;
}

interface TokenCall {
  authorization?: string | null;
  contentType?: string | null;
  body?: string;
  signal?: AbortSignal;
}

async function tokenCall(call: TokenCall = {}): Promise<Response> {
  const headers: Record<string, string> = {};
  const authorization = call.authorization === undefined ? basic() : call.authorization;
  const contentType = call.contentType === undefined ? FORM : call.contentType;
  if (authorization !== null) headers.authorization = authorization;
  if (contentType !== null) headers['content-type'] = contentType;
  return fetch(`${sim.url}/oauth/token`, {
    method: 'POST',
    headers,
    body: call.body ?? 'grant_type=client_credentials&scope=ba_demo_1',
    ...(call.signal && { signal: call.signal }),
  });
}

async function tokenFor(scope: string | null): Promise<string> {
  const body =
    scope === null
      ? 'grant_type=client_credentials'
      : `grant_type=client_credentials&scope=${scope}`;
  const res = await tokenCall({ body });
  expect(res.status).toBe(200);
  const json = (await res.json()) as { access_token: string };
  return json.access_token;
}

async function keysCall(
  id: string,
  token: string | null,
  idempotencyKey?: string,
): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
  return fetch(`${sim.url}/partner/v1/basic_auth/business_applications/${id}/keys`, {
    method: 'POST',
    headers,
    body: '{}',
  });
}

async function errorOf(res: Response): Promise<string> {
  return ((await res.json()) as { error: string }).error;
}

beforeAll(async () => {
  sim = await startProviderSimulator({ port: 0, now: () => clockMs });
});

afterAll(async () => {
  await sim.close();
});

beforeEach(() => {
  clockMs = Date.UTC(2030, 0, 1);
  sim.reset();
});

describe('token endpoint (4.1)', () => {
  it('issues a scoped token with all five fields', async () => {
    // Prepare
    const body = 'grant_type=client_credentials&scope=ba_demo_1';

    // Act
    const res = await tokenCall({ body });

    // Assess
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const json = (await res.json()) as Record<string, unknown>;
    expect(Object.keys(json).sort()).toEqual(
      ['access_token', 'created_at', 'expires_in', 'scope', 'token_type'].sort(),
    );
    expect(json.access_token).toEqual(expect.stringMatching(/^sim_[A-Za-z0-9_-]{43}$/));
    expect(json.token_type).toBe('Bearer');
    expect(json.expires_in).toBe(7200);
    expect(json.scope).toBe('ba_demo_1');
    expect(json.created_at).toBe(Math.floor(clockMs / 1000));
  });

  it('accepts a Content-Type with a charset parameter', async () => {
    // Prepare
    const contentType = `${FORM}; charset=UTF-8`;

    // Act
    const res = await tokenCall({ contentType });

    // Assess
    expect(res.status).toBe(200);
  });

  it('rejects a wrong secret with 401 invalid_client', async () => {
    // Prepare
    const authorization = basic(KEY, 'wrong-secret');

    // Act
    const res = await tokenCall({ authorization });

    // Assess
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Basic realm="provider"');
    expect(await errorOf(res)).toBe('invalid_client');
  });

  it('rejects a missing Authorization header with 401 invalid_client', async () => {
    // Prepare
    const authorization = null;

    // Act
    const res = await tokenCall({ authorization });

    // Assess
    expect(res.status).toBe(401);
    expect(await errorOf(res)).toBe('invalid_client');
  });

  it('rejects a malformed Basic header with 401 invalid_client', async () => {
    // Prepare
    const authorization = `Basic ${Buffer.from(`${KEY}${SECRET}`).toString('base64')}`;

    // Act
    const res = await tokenCall({ authorization });

    // Assess
    expect(res.status).toBe(401);
    expect(await errorOf(res)).toBe('invalid_client');
  });

  it('rejects a JSON Content-Type with 415 invalid_request', async () => {
    // Prepare
    const contentType = 'application/json';

    // Act
    const res = await tokenCall({
      contentType,
      body: JSON.stringify({ grant_type: 'client_credentials' }),
    });

    // Assess
    expect(res.status).toBe(415);
    expect(await errorOf(res)).toBe('invalid_request');
  });

  it('rejects a wrong grant_type with 400 unsupported_grant_type', async () => {
    // Prepare
    const body = 'grant_type=password&scope=ba_demo_1';

    // Act
    const res = await tokenCall({ body });

    // Assess
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toBe('unsupported_grant_type');
  });

  it('rejects a missing grant_type with 400 invalid_request', async () => {
    // Prepare
    const body = 'scope=ba_demo_1';

    // Act
    const res = await tokenCall({ body });

    // Assess
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toBe('invalid_request');
  });

  it('rejects a repeated body field with 400 invalid_request', async () => {
    // Prepare
    const body = 'grant_type=client_credentials&scope=ba_demo_1&scope=ba_demo_2';

    // Act
    const res = await tokenCall({ body });

    // Assess
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toBe('invalid_request');
  });

  it('rejects a scope that is not allowed with 400 invalid_scope', async () => {
    // Prepare
    const body = 'grant_type=client_credentials&scope=ba_other';

    // Act
    const res = await tokenCall({ body });

    // Assess
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toBe('invalid_scope');
  });

  it('rejects a body over 64 KiB with 413', async () => {
    // Prepare
    const body = `grant_type=client_credentials&pad=${'x'.repeat(70 * 1024)}`;

    // Act
    const res = await tokenCall({ body });

    // Assess
    expect(res.status).toBe(413);
    expect(await errorOf(res)).toBe('invalid_request');
  });

  it('answers 405 to GET and 404 to unknown paths', async () => {
    // Prepare
    const tokenUrl = `${sim.url}/oauth/token`;

    // Act
    const get = await fetch(tokenUrl);
    const unknown = await fetch(`${sim.url}/oauth/token/`, { method: 'POST' });

    // Assess
    expect(get.status).toBe(405);
    expect(await errorOf(get)).toBe('method_not_allowed');
    expect(unknown.status).toBe(404);
    expect(await errorOf(unknown)).toBe('not_found');
  });

  describe('unscoped tokens', () => {
    const omitted = 'grant_type=client_credentials';
    const empty = 'grant_type=client_credentials&scope=';

    it("mode 'either' accepts omitted and empty scope and echoes ''", async () => {
      // Prepare
      sim.setOptions({ unscopedMode: 'either' });

      // Act
      const a = await tokenCall({ body: omitted });
      const b = await tokenCall({ body: empty });

      // Assess
      expect(a.status).toBe(200);
      expect(b.status).toBe(200);
      expect(((await a.json()) as { scope: string }).scope).toBe('');
      expect(((await b.json()) as { scope: string }).scope).toBe('');
    });

    it("mode 'omit' accepts only an omitted scope", async () => {
      // Prepare
      sim.setOptions({ unscopedMode: 'omit' });

      // Act
      const a = await tokenCall({ body: omitted });
      const b = await tokenCall({ body: empty });

      // Assess
      expect(a.status).toBe(200);
      expect(b.status).toBe(400);
      expect(await errorOf(b)).toBe('invalid_scope');
    });

    it("mode 'empty' accepts only an empty scope", async () => {
      // Prepare
      sim.setOptions({ unscopedMode: 'empty' });

      // Act
      const a = await tokenCall({ body: omitted });
      const b = await tokenCall({ body: empty });

      // Assess
      expect(a.status).toBe(400);
      expect(await errorOf(a)).toBe('invalid_request');
      expect(b.status).toBe(200);
    });
  });

  it('reports created_at in milliseconds when configured', async () => {
    // Prepare
    sim.setOptions({ createdAtUnit: 'ms' });

    // Act
    const res = await tokenCall();

    // Assess
    expect(res.status).toBe(200);
    expect(((await res.json()) as { created_at: number }).created_at).toBe(clockMs);
  });

  it('reports the configured expires_in', async () => {
    // Prepare
    sim.setOptions({ expiresIn: 600 });

    // Act
    const res = await tokenCall();

    // Assess
    expect(res.status).toBe(200);
    expect(((await res.json()) as { expires_in: number }).expires_in).toBe(600);
  });

  it('rejects the old pair after a credential rotation', async () => {
    // Prepare
    const rotated = { key: 'rotated_key', secret: 'rotated_secret' };
    sim.setCredentials(rotated);

    // Act
    const old = await tokenCall();
    const fresh = await tokenCall({ authorization: basic(rotated.key, rotated.secret) });

    // Assess
    expect(old.status).toBe(401);
    expect(await errorOf(old)).toBe('invalid_client');
    expect(fresh.status).toBe(200);
  });

  it('counts requests, issues and scopes in stats', async () => {
    // Prepare
    sim.injectTokenFault({ kind: 'status', status: 503 });

    // Act
    await tokenCall();
    await tokenCall();
    await tokenCall({ body: 'grant_type=client_credentials' });
    await tokenCall({ authorization: basic(KEY, 'nope') });

    // Assess
    expect(sim.stats).toEqual({
      tokenRequests: 4,
      tokensIssued: 2,
      keyRequests: 0,
      keysIssued: 0,
      tokenRequestsByScope: { ba_demo_1: 3, '': 1 },
    });
  });

  it('records requests without secrets, Authorization values or tokens', async () => {
    // Prepare
    const authorization = basic();
    const idem = randomUUID();

    // Act
    const res = await tokenCall({ authorization, body: 'grant_type=client_credentials' });
    const { access_token: token } = (await res.json()) as { access_token: string };
    const keys = await keysCall('ba_demo_1', token, idem);
    const issued = (await keys.json()) as { key: string; secret: string };

    // Assess
    const log = JSON.stringify(sim.requests);
    for (const secret of [SECRET, authorization, authorization.slice(6), token, issued.key]) {
      expect(log).not.toContain(secret);
    }
    expect(log).not.toContain(issued.secret);
    expect(sim.requests).toMatchObject([
      { method: 'POST', path: '/oauth/token', endpoint: 'token', status: 200 },
      { method: 'POST', endpoint: 'keys', status: 201, idempotencyKey: idem, time: clockMs },
    ]);
    expect(sim.requests[0]).not.toHaveProperty('scope');
  });
});

describe('token faults', () => {
  it('latency delays the answer without blocking other requests', async () => {
    // Prepare
    sim.injectTokenFault({ kind: 'latency', ms: 300 });
    const started = performance.now();

    // Act
    const slow = tokenCall();
    const fast = await tokenCall();
    const fastMs = performance.now() - started;
    const slowRes = await slow;
    const slowMs = performance.now() - started;

    // Assess
    expect(fast.status).toBe(200);
    expect(slowRes.status).toBe(200);
    expect(fastMs).toBeLessThan(250);
    expect(slowMs).toBeGreaterThanOrEqual(290);
  });

  it('status 429 carries Retry-After', async () => {
    // Prepare
    sim.injectTokenFault({ kind: 'status', status: 429, retryAfter: 7 });

    // Act
    const res = await tokenCall();

    // Assess
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('7');
    expect(await errorOf(res)).toBe('too_many_requests');
    expect(sim.stats.tokensIssued).toBe(0);
  });

  it('status faults apply for the given number of times, then FIFO to the next', async () => {
    // Prepare
    sim.injectTokenFault({ kind: 'status', status: 500 }, 2);
    sim.injectTokenFault({ kind: 'status', status: 503, body: 'Service Unavailable' });

    // Act
    const statuses: number[] = [];
    for (let i = 0; i < 4; i += 1) statuses.push((await tokenCall()).status);

    // Assess
    expect(statuses).toEqual([500, 500, 503, 200]);
  });

  it('persistent faults last until clearFaults', async () => {
    // Prepare
    sim.injectTokenFault({ kind: 'status', status: 502 }, Number.POSITIVE_INFINITY);

    // Act
    const a = await tokenCall();
    const b = await tokenCall();
    sim.clearFaults();
    const c = await tokenCall();

    // Assess
    expect([a.status, b.status, c.status]).toEqual([502, 502, 200]);
    expect(await errorOf(a)).toBe('server_error');
  });

  it('malformed answers 200 with a non-JSON body', async () => {
    // Prepare
    sim.injectTokenFault({ kind: 'malformed' });

    // Act
    const res = await tokenCall();

    // Assess
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(() => JSON.parse(text)).toThrow();
  });

  it('wrongScope echoes a scope other than the requested one', async () => {
    // Prepare
    sim.injectTokenFault({ kind: 'wrongScope' });

    // Act
    const res = await tokenCall();

    // Assess
    expect(res.status).toBe(200);
    const json = (await res.json()) as { scope: string };
    expect(json.scope).not.toBe('ba_demo_1');
  });

  it("wrongTokenType answers token_type 'mac'", async () => {
    // Prepare
    sim.injectTokenFault({ kind: 'wrongTokenType' });

    // Act
    const res = await tokenCall();

    // Assess
    expect(res.status).toBe(200);
    expect(((await res.json()) as { token_type: string }).token_type).toBe('mac');
  });

  it('missingExpiresIn leaves expires_in out', async () => {
    // Prepare
    sim.injectTokenFault({ kind: 'missingExpiresIn' });

    // Act
    const res = await tokenCall();

    // Assess
    expect(res.status).toBe(200);
    const json = (await res.json()) as Record<string, unknown>;
    expect(json).not.toHaveProperty('expires_in');
    expect(json.token_type).toBe('Bearer');
  });

  it('expiresIn overrides the lifetime for one response', async () => {
    // Prepare
    sim.injectTokenFault({ kind: 'expiresIn', value: -5 });

    // Act
    const first = await tokenCall();
    const second = await tokenCall();

    // Assess
    expect(((await first.json()) as { expires_in: number }).expires_in).toBe(-5);
    expect(((await second.json()) as { expires_in: number }).expires_in).toBe(7200);
  });

  it('hang never answers, so a client timeout aborts', async () => {
    // Prepare
    sim.injectTokenFault({ kind: 'hang' });

    // Act
    const call = tokenCall({ signal: AbortSignal.timeout(200) });

    // Assess
    await expect(call).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(sim.stats.tokenRequests).toBe(1);
    expect(sim.stats.tokensIssued).toBe(0);
  });

  it('reset drops the connection without an answer, then the next request is served', async () => {
    // Prepare
    sim.injectTokenFault({ kind: 'reset' });

    // Act
    const reset = await tokenCall().then(
      () => undefined,
      (error: unknown) => error,
    );
    const next = await tokenCall();

    // Assess
    expect(reset).toBeInstanceOf(TypeError);
    expect(((reset as TypeError).cause as NodeJS.ErrnoException).code).toBe('ECONNRESET');
    expect(next.status).toBe(200);
    expect(sim.stats.tokenRequests).toBe(2);
    expect(sim.stats.tokensIssued).toBe(1);
    expect(sim.requests[0]).toMatchObject({ fault: 'reset', status: 0 });
  });

  it('close() ends hanging requests promptly', async () => {
    // Prepare
    const other = await startProviderSimulator();
    other.injectTokenFault({ kind: 'hang' });
    const call = fetch(`${other.url}/oauth/token`, {
      method: 'POST',
      headers: { authorization: basic(), 'content-type': FORM },
      body: 'grant_type=client_credentials',
    });
    const settled = call.then(
      () => 'answered',
      () => 'failed',
    );
    await new Promise((resolve) => setTimeout(resolve, 50));

    // Act
    const started = performance.now();
    await other.close();

    // Assess
    expect(await settled).toBe('failed');
    expect(performance.now() - started).toBeLessThan(1000);
  });
});

describe('control endpoint (/__simulator/)', () => {
  const control = (path: string, init: RequestInit = {}) =>
    fetch(`${sim.url}/__simulator/${path}`, init);
  const inject = (request: unknown) =>
    control('faults', { method: 'POST', body: JSON.stringify(request) });

  it('queues a fault from outside the process for the next requests, and reports the counts', async () => {
    const queued = await inject({
      endpoint: 'token',
      fault: { kind: 'status', status: 503, retryAfter: 2 },
      times: 2,
    });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await tokenCall()).status);
    const stats = await (await control('stats')).json();

    expect(queued.status).toBe(202);
    expect(statuses).toEqual([503, 503, 200]);
    expect(stats).toMatchObject({ tokenRequests: 3, tokenRequestsByScope: { ba_demo_1: 3 } });
  });

  it('queues key-issuing faults too', async () => {
    await inject({ endpoint: 'keys', fault: { kind: 'status', status: 500 } });

    const res = await keysCall('ba_demo_1', await tokenFor(null), randomUUID());

    expect(res.status).toBe(500);
  });

  it.each([
    ['not JSON', 'nope'],
    ['an unknown endpoint', JSON.stringify({ endpoint: 'other', fault: { kind: 'hang' } })],
    [
      'a fault the endpoint has not',
      JSON.stringify({ endpoint: 'token', fault: { kind: 'dropAfterCommit' } }),
    ],
    [
      'a status outside 400..599',
      JSON.stringify({ endpoint: 'token', fault: { kind: 'status', status: 200 } }),
    ],
    ['times of 0', JSON.stringify({ endpoint: 'token', fault: { kind: 'hang' }, times: 0 })],
  ])('refuses %s with 400, queueing nothing', async (_label, body) => {
    const res = await control('faults', { method: 'POST', body });

    expect(res.status).toBe(400);
    expect(await errorOf(res)).toBe('invalid_request');
    expect((await tokenCall()).status).toBe(200);
  });

  it('answers 404 to other control paths and 405 to the wrong method', async () => {
    expect((await control('reset', { method: 'POST' })).status).toBe(404);
    expect((await control('faults', { method: 'PUT', body: '{}' })).status).toBe(405);
    expect((await control('stats', { method: 'POST' })).status).toBe(405);
  });
});

describe('key-issuing endpoint (4.2)', () => {
  it('issues keys with an unscoped token: 201', async () => {
    // Prepare
    const token = await tokenFor(null);

    // Act
    const res = await keysCall('ba_demo_2', token, randomUUID());

    // Assess
    expect(res.status).toBe(201);
    const json = (await res.json()) as Record<string, unknown>;
    expect(json).toEqual({
      business_application_id: 'ba_demo_2',
      key: expect.stringMatching(/^bak_/),
      secret: expect.stringMatching(/^bas_/),
      created_at: Math.floor(clockMs / 1000),
    });
    expect(sim.stats.keysIssued).toBe(1);
  });

  it('accepts a request without Idempotency-Key', async () => {
    // Prepare
    const token = await tokenFor(null);

    // Act
    const res = await keysCall('ba_demo_1', token);

    // Assess
    expect(res.status).toBe(201);
  });

  it('rejects a scoped token with 403 insufficient_scope', async () => {
    // Prepare
    const token = await tokenFor('ba_demo_1');

    // Act
    const res = await keysCall('ba_demo_1', token, randomUUID());

    // Assess
    expect(res.status).toBe(403);
    expect(await errorOf(res)).toBe('insufficient_scope');
  });

  it('rejects an unknown token with 401 invalid_token', async () => {
    // Prepare
    const token = 'sim_not_a_real_token';

    // Act
    const res = await keysCall('ba_demo_1', token, randomUUID());

    // Assess
    expect(res.status).toBe(401);
    expect(await errorOf(res)).toBe('invalid_token');
  });

  it('rejects a missing Authorization with 401 invalid_token', async () => {
    // Prepare
    const token = null;

    // Act
    const res = await keysCall('ba_demo_1', token);

    // Assess
    expect(res.status).toBe(401);
    expect(await errorOf(res)).toBe('invalid_token');
  });

  it('rejects an expired token with 401 invalid_token', async () => {
    // Prepare
    const token = await tokenFor(null);
    clockMs += 7200 * 1000;

    // Act
    const res = await keysCall('ba_demo_1', token, randomUUID());

    // Assess
    expect(res.status).toBe(401);
    expect(await errorOf(res)).toBe('invalid_token');
  });

  it('answers 403 feature_not_enabled when key issuing is disabled', async () => {
    // Prepare
    sim.setOptions({ keyIssuingEnabled: false });
    const token = await tokenFor(null);

    // Act
    const res = await keysCall('ba_demo_1', token, randomUUID());

    // Assess
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({
      error: 'feature_not_enabled',
      error_description:
        'Basic Auth key issuing is not enabled for this partner; contact customer success',
    });
  });

  it('answers 404 not_found for an unknown business application', async () => {
    // Prepare
    const token = await tokenFor(null);

    // Act
    const res = await keysCall('ba_unknown', token, randomUUID());

    // Assess
    expect(res.status).toBe(404);
    expect(await errorOf(res)).toBe('not_found');
  });

  it('replays the first answer for a repeated Idempotency-Key', async () => {
    // Prepare
    const token = await tokenFor(null);
    const idem = randomUUID();
    const first = await keysCall('ba_demo_1', token, idem);
    const firstBody = await first.text();

    // Act
    const replay = await keysCall('ba_demo_1', token, idem);

    // Assess
    expect(first.status).toBe(201);
    expect(replay.status).toBe(201);
    expect(await replay.text()).toBe(firstBody);
    expect(sim.stats.keysIssued).toBe(1);
    expect(sim.stats.keyRequests).toBe(2);
  });

  it('rejects an Idempotency-Key reused for another id with 422', async () => {
    // Prepare
    const token = await tokenFor(null);
    const idem = randomUUID();
    await keysCall('ba_demo_1', token, idem);

    // Act
    const res = await keysCall('ba_demo_2', token, idem);

    // Assess
    expect(res.status).toBe(422);
    expect(await errorOf(res)).toBe('idempotency_key_reused');
  });

  it('rejects an Idempotency-Key that is not a UUID with 400 invalid_request', async () => {
    // Prepare
    const token = await tokenFor(null);

    // Act
    const res = await keysCall('ba_demo_1', token, 'not-a-uuid');

    // Assess
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toBe('invalid_request');
  });

  it('answers 405 to GET on the keys path', async () => {
    // Prepare
    const url = `${sim.url}/partner/v1/basic_auth/business_applications/ba_demo_1/keys`;

    // Act
    const res = await fetch(url);

    // Assess
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
  });

  it('dropAfterCommit issues the keys, then destroys the connection without an answer', async () => {
    // Prepare
    const token = await tokenFor(null);
    const idem = randomUUID();
    sim.injectKeysFault({ kind: 'dropAfterCommit' });

    // Act
    const lost = await keysCall('ba_demo_1', token, idem).then(
      () => 'answered',
      (e: unknown) => (e instanceof TypeError ? 'network error' : 'other'),
    );
    const replay = await keysCall('ba_demo_1', token, idem);

    // Assess: the first request committed, so the replay returns its keys
    expect(lost).toBe('network error');
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(sim.stats.keysIssued).toBe(1);
    expect(sim.requests.filter((r) => r.endpoint === 'keys')).toMatchObject([
      { status: 0, fault: 'dropAfterCommit', idempotencyKey: idem },
      { status: 201, idempotencyKey: idem },
    ]);
  });

  it('revokeTokens makes every issued token answer 401 invalid_token', async () => {
    // Prepare
    const token = await tokenFor(null);

    // Act
    sim.revokeTokens();
    const res = await keysCall('ba_demo_1', token, randomUUID());
    const fresh = await keysCall('ba_demo_1', await tokenFor(null), randomUUID());

    // Assess
    expect(res.status).toBe(401);
    expect(await errorOf(res)).toBe('invalid_token');
    expect(fresh.status).toBe(201);
  });

  it('accepts an empty body, and checks a non-empty one is a JSON object', async () => {
    // Prepare
    const token = await tokenFor(null);
    const url = `${sim.url}/partner/v1/basic_auth/business_applications/ba_demo_1/keys`;
    const call = (body: string | undefined, contentType?: string) =>
      fetch(url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          ...(contentType ? { 'content-type': contentType } : {}),
        },
        ...(body === undefined ? {} : { body }),
      });

    // Act
    const empty = await call(undefined);
    const text = await call('{"label":"x"}', 'text/plain');
    const broken = await call('{"label":', 'application/json');
    const array = await call('[1]', 'application/json');
    const object = await call('{"label":"x"}', 'application/json; charset=utf-8');

    // Assess
    expect(empty.status).toBe(201);
    expect(text.status).toBe(415);
    expect(broken.status).toBe(400);
    expect(array.status).toBe(400);
    expect(object.status).toBe(201);
  });

  it('keys fault reset drops the connection before the keys are issued', async () => {
    // Prepare
    const token = await tokenFor(null);
    sim.injectKeysFault({ kind: 'reset' });

    // Act
    const reset = await keysCall('ba_demo_1', token).then(
      () => 'answered',
      () => 'failed',
    );

    // Assess
    expect(reset).toBe('failed');
    expect(sim.stats.keysIssued).toBe(0);
  });

  it('keys faults: 429 with Retry-After, then malformed, then a real answer', async () => {
    // Prepare
    const token = await tokenFor(null);
    sim.injectKeysFault({ kind: 'status', status: 429, retryAfter: 3 });
    sim.injectKeysFault({ kind: 'malformed' });

    // Act
    const limited = await keysCall('ba_demo_1', token, randomUUID());
    const malformed = await keysCall('ba_demo_1', token, randomUUID());
    const ok = await keysCall('ba_demo_1', token, randomUUID());

    // Assess
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('3');
    const text = await malformed.text();
    expect(() => JSON.parse(text)).toThrow();
    expect(ok.status).toBe(201);
    expect(sim.stats.keyRequests).toBe(3);
    expect(sim.stats.keysIssued).toBe(1);
  });
});
