import { createHash } from 'node:crypto';
/**
 * TokenVendingClient with a scripted fetch: every request is really signed
 * (and checked with the local Function URL's SigV4 verifier); time is a fake
 * clock, so retries never wait.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  type ClientClock,
  type FetchFunction,
  resolveRegion,
  TokenVendingClient,
  type TokenVendingClientOptions,
  TokenVendingError,
} from '../../client/index.js';
import type { LocalIdentity } from '../../local/local-identities.js';
import { verifySigV4 } from '../../local/sigv4-verifier.js';

const IDENTITY: LocalIdentity = {
  accessKeyId: 'AKIAUNITTEST00000001',
  secretAccessKey: 'unitTestSecretAccessKey00000000000000000',
  arn: 'arn:aws:iam::111122223333:role/checkout',
};
const URL_EU = 'https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws';
/** What every scripted 200 carries; it must never reach an error message. */
const SECRET_TOKEN = 'tok_never_in_errors_0123456789';

type Answer = Response | Error | ((signal: AbortSignal) => Promise<Response>);

interface Sent {
  readonly url: string;
  /** Lower-case names. */
  readonly headers: Record<string, string>;
}

/** The local URL's SigV4 check of a sent request, as the real URL checks it (eu-west-1). */
function verdictOf(request: Sent, identity: LocalIdentity): ReturnType<typeof verifySigV4> {
  const url = new URL(request.url);
  return verifySigV4(
    {
      method: 'GET',
      path: url.pathname,
      rawQueryString: url.search.slice(1),
      headers: { ...request.headers, host: url.host },
      body: new Uint8Array(),
    },
    { identities: [identity], region: 'eu-west-1', now: Date.now() },
  );
}

/** A fetch that answers from a script and fails the test on an unexpected request. */
function scriptedFetch(...answers: Answer[]): { fetch: FetchFunction; sent: Sent[] } {
  const sent: Sent[] = [];
  const queue = [...answers];
  return {
    sent,
    fetch: async (input, init) => {
      sent.push({ url: input, headers: Object.fromEntries(new Headers(init.headers).entries()) });
      const next = queue.shift();
      if (next === undefined) throw new Error(`unexpected request ${sent.length}`);
      if (next instanceof Error) throw next;
      if (typeof next === 'function') return next(init.signal as AbortSignal);
      return next;
    },
  };
}

function fakeClock(startMs = Date.UTC(2030, 0, 1)): ClientClock & { sleeps: number[] } {
  let now = startMs;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => now,
    sleep: async (ms) => {
      sleeps.push(ms);
      now += ms;
    },
  };
}

const nowSeconds = (clock: ClientClock) => Math.floor(clock.now() / 1000);

function tokenAnswer(
  clock: ClientClock,
  fields: { scope?: string; expiresIn?: number; token?: string } = {},
): Response {
  const expiresIn = fields.expiresIn ?? 7200;
  return Response.json({
    access_token: fields.token ?? SECRET_TOKEN,
    token_type: 'Bearer',
    expires_in: expiresIn,
    expires_at: nowSeconds(clock) + expiresIn,
    ...(fields.scope !== undefined ? { scope: fields.scope } : {}),
  });
}

function problem(
  status: number,
  code: string,
  title: string,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify({ status, code, title, detail: `detail of ${code}` }), {
    status,
    headers: { 'content-type': 'application/problem+json', ...headers },
  });
}

/** A 200 that arrives `ms` later by the (faked) timers. */
function slowTokenAnswer(clock: ClientClock, ms: number): Answer {
  return () =>
    new Promise<Response>((resolve) => {
      setTimeout(() => resolve(tokenAnswer(clock)), ms);
    });
}

function client(
  fetch: FetchFunction,
  clock: ClientClock,
  options: Partial<TokenVendingClientOptions> = {},
): TokenVendingClient {
  return new TokenVendingClient({ url: URL_EU, credentials: IDENTITY, fetch, clock, ...options });
}

async function caught(promise: Promise<unknown>): Promise<TokenVendingError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TokenVendingError);
  const typed = error as TokenVendingError;
  expect(typed.message).not.toContain(SECRET_TOKEN);
  expect(typed.message).toBe(`${typed.code}: ${typed.title}`);
  return typed;
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('signing', () => {
  it('sends GET /token signed with SigV4 for lambda in the URL region', async () => {
    const clock = fakeClock(Date.now());
    const { fetch, sent } = scriptedFetch(tokenAnswer(clock, { scope: 'ba_1' }));

    await client(fetch, clock).getToken({ scope: 'ba_1', minTtl: 600 });

    expect(sent).toHaveLength(1);
    const [request] = sent as [Sent];
    const url = new URL(request.url);
    expect(`${url.origin}${url.pathname}`).toBe(`${URL_EU}/token`);
    expect(url.search).toBe('?min_ttl=600&scope=ba_1');
    expect(request.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIAUNITTEST00000001\/\d{8}\/eu-west-1\/lambda\/aws4_request, /,
    );
    expect(verdictOf(request, IDENTITY)).toMatchObject({ ok: true });
  });

  it('percent-encodes the scope as SigV4 canonicalises it', async () => {
    const clock = fakeClock(Date.now());
    const { fetch, sent } = scriptedFetch(tokenAnswer(clock, { scope: 'app:1.x' }));

    await client(fetch, clock).getToken({ scope: 'app:1.x' });

    expect(new URL(sent[0]?.url ?? '').search).toBe('?min_ttl=300&scope=app%3A1.x');
  });

  it('sends the session token of temporary credentials', async () => {
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch(tokenAnswer(clock));
    const credentials = async () => ({ ...IDENTITY, sessionToken: 'session-token-1' });

    await client(fetch, clock, { credentials }).getToken();

    expect(sent[0]?.headers['x-amz-security-token']).toBe('session-token-1');
    expect(sent[0]?.headers.authorization).toContain('x-amz-security-token');
  });

  it('uses the default credential chain when given no credentials', async () => {
    vi.stubEnv('AWS_PROFILE', undefined);
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'AKIAFROMENVIRONMENT1');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'secretFromEnvironment');
    vi.stubEnv('AWS_SESSION_TOKEN', undefined);
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch(tokenAnswer(clock));

    await new TokenVendingClient({ url: URL_EU, fetch, clock }).getToken();

    expect(sent[0]?.headers.authorization).toContain('Credential=AKIAFROMENVIRONMENT1/');
  });

  it('reports credentials that cannot be resolved as credentials_unavailable, sending nothing', async () => {
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch();
    const failure = new Error('Could not load credentials from any providers');
    const credentials = async () => {
      throw failure;
    };

    const error = await caught(client(fetch, clock, { credentials }).getToken());

    expect(error).toMatchObject({ code: 'credentials_unavailable', status: 0 });
    expect(error.cause).toBe(failure);
    expect(sent).toHaveLength(0);
  });

  it.each([
    ['an access key id holding a carriage return', { accessKeyId: 'AKIAUNITTEST0000\r0001' }],
    ['a session token holding a line break', { sessionToken: 'sessionTokenNeverInErrors\n0123' }],
  ])(
    'regression: credentials with %s are refused before any header is built from them, quoting neither them nor the Authorization header',
    async (_, broken) => {
      const credentials = { ...IDENTITY, ...broken };
      // The real fetch: undici's "Headers.append: \"...\" is an invalid header value" quotes the header.
      const error = await caught(
        new TokenVendingClient({
          url: 'http://127.0.0.1:9',
          region: 'eu-west-1',
          credentials,
          clock: fakeClock(),
        }).getToken(),
      );

      expect(error).toMatchObject({ code: 'credentials_unavailable', status: 0 });
      const said: string[] = [];
      for (let e: unknown = error; e !== undefined; e = e instanceof Error ? e.cause : undefined) {
        said.push(String((e as Error).message), String((e as Error).stack), JSON.stringify(e));
      }
      const text = said.join('\n');
      expect(text).not.toContain('AWS4-HMAC-SHA256');
      expect(text).not.toContain('sessionTokenNeverInErrors');
      expect(text).not.toContain('AKIAUNITTEST0000');
    },
  );
});

describe('signing with credentials read from a file with line endings', () => {
  it.each([
    ['a line feed', '\n'],
    ['a carriage return and line feed (a CRLF .env)', '\r\n'],
  ])(
    'a session token ending in %s is sent as fetch sends it (trimmed) and its signature verifies',
    async (_, ending) => {
      const clock = fakeClock(Date.now());
      const { fetch, sent } = scriptedFetch(tokenAnswer(clock));
      const identity = { ...IDENTITY, sessionToken: 'session-token-from-a-file' };

      const token = await client(fetch, clock, {
        credentials: { ...identity, sessionToken: `${identity.sessionToken}${ending}` },
      }).getToken();

      expect(token.accessToken).toBe(SECRET_TOKEN);
      const [request] = sent as [Sent];
      expect(request.headers['x-amz-security-token']).toBe(identity.sessionToken);
      expect(verdictOf(request, identity)).toMatchObject({ ok: true });
    },
  );
});

describe('configuration', () => {
  it('takes the region from a Function URL, before AWS_REGION', () => {
    expect(resolveRegion(new URL(URL_EU), { AWS_REGION: 'us-west-2' })).toBe('eu-west-1');
  });

  it('uses AWS_REGION, then us-east-1, for loopback URLs', () => {
    const local = new URL('http://127.0.0.1:8787');
    expect(resolveRegion(local, { AWS_REGION: 'ap-southeast-2' })).toBe('ap-southeast-2');
    expect(resolveRegion(local, {})).toBe('us-east-1');
    expect(resolveRegion(new URL('http://localhost:8787'), {})).toBe('us-east-1');
  });

  it('signs with an explicit region over the URL one', async () => {
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch(tokenAnswer(clock));

    await client(fetch, clock, { region: 'eu-central-1' }).getToken();

    expect(sent[0]?.headers.authorization).toMatch(/\/eu-central-1\/lambda\/aws4_request/);
  });

  it('refuses a host whose region it cannot know', () => {
    vi.stubEnv('AWS_REGION', undefined);

    expect(() => new TokenVendingClient({ url: 'https://vend.example.com' })).toThrowError(
      expect.objectContaining({ code: 'invalid_config' }),
    );
  });

  it.each(['timeoutMs', 'retryBudgetMs'] as const)(
    'regression: refuses a %s longer than a Node.js timer (it would fire after 1 ms)',
    (option) => {
      expect(() => new TokenVendingClient({ url: URL_EU, [option]: 3e9 })).toThrowError(
        expect.objectContaining({
          code: 'invalid_config',
          message: expect.stringContaining(`${option} must be at most 2147483647`),
        }),
      );
      expect(() => new TokenVendingClient({ url: URL_EU, [option]: 2_147_483_647 })).not.toThrow();
    },
  );

  it('reports every bad option at once', () => {
    let error: unknown;
    try {
      new TokenVendingClient({ url: 'ftp://x', timeoutMs: -1, maxRetries: 1.5, region: 'x' });
    } catch (e) {
      error = e;
    }

    expect(error).toBeInstanceOf(TokenVendingError);
    expect(error).toMatchObject({ name: 'TokenVendingError', code: 'invalid_config', status: 0 });
    const { message } = error as Error;
    expect(message).toContain('url must be an http(s) URL');
    expect(message).toContain('timeoutMs');
    expect(message).toContain('maxRetries');
  });
});

describe('caching and single flight', () => {
  it('serves a token with more than minTtl seconds left from the cache', async () => {
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch(tokenAnswer(clock, { scope: 'ba_1' }));
    const vending = client(fetch, clock);

    const first = await vending.getToken({ scope: 'ba_1' });
    await clock.sleep((7200 - 301) * 1000);
    const second = await vending.getToken({ scope: 'ba_1' });

    expect(second).toBe(first);
    expect(sent).toHaveLength(1);
  });

  it('asks again when the cached token has exactly minTtl seconds left', async () => {
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch(tokenAnswer(clock, { scope: 'ba_1' }), () =>
      Promise.resolve(tokenAnswer(clock, { scope: 'ba_1', token: 'tok_2' })),
    );
    const vending = client(fetch, clock);

    await vending.getToken({ scope: 'ba_1' });
    await clock.sleep((7200 - 300) * 1000);
    const second = await vending.getToken({ scope: 'ba_1' });

    expect(second.accessToken).toBe('tok_2');
    expect(sent).toHaveLength(2);
  });

  it('asks again for a larger minTtl than the cached token can meet', async () => {
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch(
      tokenAnswer(clock, { expiresIn: 1000 }),
      tokenAnswer(clock, { expiresIn: 7200 }),
    );
    const vending = client(fetch, clock);

    await vending.getToken({ minTtl: 300 });
    await vending.getToken({ minTtl: 600 });
    await vending.getToken({ minTtl: 1200 });

    expect(sent.map((s) => new URL(s.url).searchParams.get('min_ttl'))).toEqual(['300', '1200']);
  });

  it('keeps scopes apart, the unscoped token included', async () => {
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch(
      tokenAnswer(clock, { scope: 'ba_1', token: 'tok_a' }),
      tokenAnswer(clock, { scope: 'ba_2', token: 'tok_b' }),
      tokenAnswer(clock, { token: 'tok_c' }),
    );
    const vending = client(fetch, clock);

    const tokens = [
      await vending.getToken({ scope: 'ba_1' }),
      await vending.getToken({ scope: 'ba_2' }),
      await vending.getToken(),
      await vending.getToken({ scope: 'ba_1' }),
    ];

    expect(tokens.map((t) => t.accessToken)).toEqual(['tok_a', 'tok_b', 'tok_c', 'tok_a']);
    expect(sent).toHaveLength(3);
  });

  it('shares one request among concurrent callers, and its failure too', async () => {
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch(problem(403, 'access_denied', 'Access denied'));
    const vending = client(fetch, clock);

    const results = await Promise.allSettled(
      Array.from({ length: 10 }, () => vending.getToken({ scope: 'ba_1' })),
    );

    expect(sent).toHaveLength(1);
    expect(results.every((r) => r.status === 'rejected')).toBe(true);
    expect(results.map((r) => (r as PromiseRejectedResult).reason.code)).toEqual(
      Array(10).fill('access_denied'),
    );
  });

  it('lets a caller needing a longer minTtl start its own request', async () => {
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch(tokenAnswer(clock), tokenAnswer(clock));
    const vending = client(fetch, clock);

    await Promise.all([
      vending.getToken({ minTtl: 300 }),
      vending.getToken({ minTtl: 100 }),
      vending.getToken({ minTtl: 900 }),
    ]);

    expect(sent.map((s) => new URL(s.url).searchParams.get('min_ttl'))).toEqual(['300', '900']);
  });

  it('does not cache failures', async () => {
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch(
      problem(502, 'upstream_error', 'Provider answered unexpectedly'),
      tokenAnswer(clock),
    );
    const vending = client(fetch, clock);

    await caught(vending.getToken());
    const token = await vending.getToken();

    expect(token.accessToken).toBe(SECRET_TOKEN);
    expect(sent).toHaveLength(2);
  });

  it('forgets a cached token on invalidate', async () => {
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch(
      tokenAnswer(clock, { scope: 'ba_1' }),
      tokenAnswer(clock),
      tokenAnswer(clock, { scope: 'ba_1' }),
      tokenAnswer(clock),
    );
    const vending = client(fetch, clock);
    await vending.getToken({ scope: 'ba_1' });
    await vending.getToken();

    vending.invalidate('ba_1');
    await vending.getToken({ scope: 'ba_1' });
    await vending.getToken();
    vending.invalidate(null);
    await vending.getToken();

    expect(sent).toHaveLength(4);
  });

  it('names the token it dropped on the next request for that scope only, once', async () => {
    // Regression (fault matrix): after a provider revoked a young token, invalidate and
    // a higher min_ttl still got the same token back, which had far more left than 3600 s.
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch(
      tokenAnswer(clock, { scope: 'ba_1' }),
      tokenAnswer(clock, { scope: 'ba_1', token: 'tok_replacement' }),
      tokenAnswer(clock, { scope: 'ba_2' }),
    );
    const vending = client(fetch, clock);
    await vending.getToken({ scope: 'ba_1' });

    vending.invalidate('ba_1');
    const renewed = await vending.getToken({ scope: 'ba_1', minTtl: 3600 });
    await vending.getToken({ scope: 'ba_2' });

    const fingerprint = createHash('sha256').update(SECRET_TOKEN).digest('hex').slice(0, 16);
    const queries = sent.map((request) => new URL(request.url).search);
    expect(queries).toEqual([
      '?min_ttl=300&scope=ba_1',
      `?min_ttl=3600&revoked=${fingerprint}&scope=ba_1`,
      '?min_ttl=300&scope=ba_2',
    ]);
    expect(renewed.accessToken).toBe('tok_replacement');
  });

  it('returns frozen tokens, and the Authorization header', async () => {
    const clock = fakeClock();
    const { fetch } = scriptedFetch(tokenAnswer(clock, { scope: 'ba_1' }));
    const vending = client(fetch, clock);

    const header = await vending.authorizationHeader('ba_1');
    const token = await vending.getToken({ scope: 'ba_1' });

    expect(header).toBe(`Bearer ${SECRET_TOKEN}`);
    expect(Object.isFrozen(token)).toBe(true);
    expect(token).toEqual({
      accessToken: SECRET_TOKEN,
      tokenType: 'Bearer',
      expiresAt: nowSeconds(clock) + 7200,
      scope: 'ba_1',
    });
  });
});

describe('errors', () => {
  it('carries the problem code, title, detail and request id', async () => {
    const clock = fakeClock();
    const { fetch } = scriptedFetch(
      problem(403, 'access_denied', 'Access denied', { 'x-amzn-RequestId': 'req-1' }),
    );

    const error = await caught(client(fetch, clock).getToken({ scope: 'ba_1' }));

    expect(error).toMatchObject({
      name: 'TokenVendingError',
      code: 'access_denied',
      status: 403,
      title: 'Access denied',
      detail: 'detail of access_denied',
      requestId: 'req-1',
      message: 'access_denied: Access denied',
    });
  });

  it.each([
    [403, '{"Message":"Forbidden"}', 'access_denied'],
    [401, '', 'unauthenticated'],
    [404, 'nope', 'not_found'],
    [413, '{"Message":"Request Entity Too Large"}', 'invalid_request'],
    [502, '{"Message":"Internal Server Error"}', 'internal_error'],
    [302, '', 'unexpected_response'],
    [418, `{"code":"made_up","title":"${SECRET_TOKEN}"}`, 'unexpected_response'],
  ])('maps HTTP %i without a problem body to %s, never retrying', async (status, body, code) => {
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch(new Response(body, { status }));

    const error = await caught(client(fetch, clock).getToken());

    expect(error).toMatchObject({ code, status });
    expect(sent).toHaveLength(1);
    expect(clock.sleeps).toEqual([]);
  });

  it.each([
    ['not JSON', 'not json'],
    ['no access_token', { token_type: 'Bearer', expires_at: 2_000_000_000 }],
    ['another token_type', { access_token: SECRET_TOKEN, token_type: 'mac', expires_at: 2e9 }],
    ['no expires_at', { access_token: SECRET_TOKEN, token_type: 'Bearer' }],
    [
      'another scope',
      { access_token: SECRET_TOKEN, token_type: 'Bearer', expires_at: 2e9, scope: 'ba_9' },
    ],
  ])('refuses a 200 with %s as invalid_response', async (_case, body) => {
    const clock = fakeClock();
    const { fetch } = scriptedFetch(
      new Response(typeof body === 'string' ? body : JSON.stringify(body), { status: 200 }),
    );

    const error = await caught(client(fetch, clock).getToken({ scope: 'ba_1' }));

    expect(error).toMatchObject({ code: 'invalid_response', status: 200 });
    expect(JSON.stringify(error)).not.toContain(SECRET_TOKEN);
  });

  it('refuses a scoped answer to an unscoped request', async () => {
    const clock = fakeClock();
    const { fetch } = scriptedFetch(tokenAnswer(clock, { scope: 'ba_1' }));

    const error = await caught(client(fetch, clock).getToken());

    expect(error.code).toBe('invalid_response');
  });

  it('reports a request without an answer in timeoutMs as timeout', async () => {
    const clock = fakeClock();
    const hang = (signal: AbortSignal) =>
      new Promise<Response>((_resolve, reject) => {
        signal.addEventListener('abort', () => reject(signal.reason));
      });
    const { fetch } = scriptedFetch(hang);

    const error = await caught(client(fetch, clock, { timeoutMs: 20 }).getToken());

    expect(error).toMatchObject({ code: 'timeout', status: 0 });
  });

  it('receives a vend as slow as a dead lease holder makes it, with the default timeout', async () => {
    // Regression: the default timeout was 10 s, but a vend that waits 13 s on
    // another instance's refresh and then mints answers after about 23 s.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const clock = fakeClock();
      const { fetch, sent } = scriptedFetch(slowTokenAnswer(clock, 25_000));
      const pending = client(fetch, clock).getToken();
      while (sent.length === 0) await new Promise((resolve) => setImmediate(resolve));
      await vi.advanceTimersByTimeAsync(25_000);

      await expect(pending).resolves.toMatchObject({ accessToken: SECRET_TOKEN });
      expect(sent).toHaveLength(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it('times out even when the fetch ignores the abort signal', async () => {
    // Regression: the deadline used to rely on fetch honouring AbortSignal.
    const clock = fakeClock();
    const { fetch } = scriptedFetch(() => new Promise<Response>(() => undefined));

    const error = await caught(client(fetch, clock, { timeoutMs: 20 }).getToken());

    expect(error).toMatchObject({ code: 'timeout', status: 0 });
  });

  it('times out a credential provider that never answers, and later calls are not stuck', async () => {
    const clock = fakeClock();
    const { fetch } = scriptedFetch();
    const hung = client(fetch, clock, {
      timeoutMs: 20,
      credentials: () => new Promise(() => undefined),
    });

    const first = await caught(hung.getToken());
    const second = await caught(hung.getToken());

    expect(first.code).toBe('timeout');
    expect(second.code).toBe('timeout');
  });

  it('judges expiry by its own clock too, when the server clock is ahead', async () => {
    // Prepare: the server's clock is 250 s ahead; its expires_at looks 250 s longer to us
    const clock = fakeClock();
    const ahead = Response.json({
      access_token: SECRET_TOKEN,
      token_type: 'Bearer',
      expires_in: 500,
      expires_at: nowSeconds(clock) + 250 + 500,
    });
    const { fetch, sent } = scriptedFetch(ahead, tokenAnswer(clock));
    const vending = client(fetch, clock);

    // Act
    const first = await vending.getToken();
    await clock.sleep(250_000);
    await vending.getToken({ minTtl: 300 });

    // Assess
    expect(first.expiresAt).toBe(nowSeconds(clock) - 250 + 500);
    expect(sent).toHaveLength(2);
  });

  it('rejects an answer whose token has already expired', async () => {
    const clock = fakeClock();
    const expired = Response.json({
      access_token: SECRET_TOKEN,
      token_type: 'Bearer',
      expires_at: nowSeconds(clock) - 10,
    });
    const { fetch } = scriptedFetch(expired);

    const error = await caught(client(fetch, clock).getToken());

    expect(error).toMatchObject({ code: 'invalid_response', status: 200 });
  });

  it.each([
    [{ minTtl: Number.NaN }],
    [{ minTtl: -1 }],
    [{ minTtl: 1.5 }],
    [{ minTtl: 3601 }],
    [{ scope: '' }],
    [{ scope: 'not a scope!' }],
  ])('rejects %j before sending anything', async (options) => {
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch();

    const error = await caught(client(fetch, clock).getToken(options));

    expect(error).toMatchObject({ code: 'invalid_request', status: 0 });
    expect(sent).toHaveLength(0);
  });

  it('reports a failed connection as network_error, keeping the cause', async () => {
    const clock = fakeClock();
    const failure = new TypeError('fetch failed');
    const { fetch } = scriptedFetch(failure);

    const error = await caught(client(fetch, clock).getToken());

    expect(error).toMatchObject({ code: 'network_error', status: 0 });
    expect(error.message).toBe(`network_error: Could not reach ${new URL(URL_EU).host}`);
    expect(error.cause).toBe(failure);
  });
});

describe('retries', () => {
  const unavailable = (retryAfter?: string) =>
    problem(
      503,
      'upstream_unavailable',
      'Provider unavailable',
      retryAfter ? { 'retry-after': retryAfter } : {},
    );

  it('retries a 503 after Retry-After seconds', async () => {
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch(unavailable('3'), tokenAnswer(clock));

    const token = await client(fetch, clock).getToken();

    expect(token.accessToken).toBe(SECRET_TOKEN);
    expect(clock.sleeps).toEqual([3000]);
    expect(sent).toHaveLength(2);
  });

  it('reads a Retry-After HTTP date', async () => {
    const clock = fakeClock();
    const date = new Date(clock.now() + 4000).toUTCString();
    const { fetch } = scriptedFetch(unavailable(date), tokenAnswer(clock));

    await client(fetch, clock).getToken();

    expect(clock.sleeps).toEqual([4000]);
  });

  it('backs off 1 s then 2 s when a 503 has no Retry-After', async () => {
    const clock = fakeClock();
    const { fetch } = scriptedFetch(
      new Response('{"Message":"Service Unavailable"}', { status: 503 }),
      new Response('', { status: 503 }),
      tokenAnswer(clock),
    );

    await client(fetch, clock).getToken();

    expect(clock.sleeps).toEqual([1000, 2000]);
  });

  const throttled = (headers: Record<string, string> = {}) =>
    new Response('{"Message":"Rate Exceeded."}', { status: 429, headers });

  it('retries a 429 (Lambda throttled the function) after a jittered back-off, then gives up with throttled', async () => {
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch(throttled(), tokenAnswer(clock));
    const again = scriptedFetch(throttled(), throttled(), throttled());

    const token = await client(fetch, clock, { random: () => 0 }).getToken();
    const error = await caught(client(again.fetch, clock, { random: () => 0.999 }).getToken());

    expect(token.accessToken).toBe(SECRET_TOKEN);
    expect(sent).toHaveLength(2);
    expect(error).toMatchObject({ code: 'throttled', status: 429 });
    expect(again.sent).toHaveLength(3);
    // 400 ms doubling, jittered to between half and all of it
    expect(clock.sleeps).toEqual([200, 400, 800]);
  });

  it('spreads throttled callers out even when the 429 says Retry-After: 0, and waits longer when it asks', async () => {
    const clock = fakeClock();
    const zero = scriptedFetch(throttled({ 'retry-after': '0' }), tokenAnswer(clock));
    const three = scriptedFetch(throttled({ 'retry-after': '3' }), tokenAnswer(clock));

    await client(zero.fetch, clock, { random: () => 0.5 }).getToken();
    await client(three.fetch, clock, { random: () => 0.5 }).getToken();

    expect(clock.sleeps).toEqual([300, 3000]);
  });

  it('retries a 429 by its status, whatever its body says', async () => {
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch(
      problem(429, 'upstream_unavailable', 'Slow down'),
      tokenAnswer(clock),
    );

    await client(fetch, clock, { random: () => 0 }).getToken();

    expect(sent).toHaveLength(2);
  });

  it('does not retry a 429 past the retry budget, nor with maxRetries 0', async () => {
    const clock = fakeClock();
    const late = scriptedFetch(throttled({ 'retry-after': '20' }));
    const none = scriptedFetch(throttled());

    const lateError = await caught(client(late.fetch, clock, { retryBudgetMs: 10_000 }).getToken());
    const noneError = await caught(client(none.fetch, clock, { maxRetries: 0 }).getToken());

    expect([lateError.code, noneError.code]).toEqual(['throttled', 'throttled']);
    expect([late.sent.length, none.sent.length]).toEqual([1, 1]);
    expect(clock.sleeps).toEqual([]);
  });

  it('gives up after maxRetries with the last 503', async () => {
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch(unavailable('1'), unavailable('1'), unavailable('2'));

    const error = await caught(client(fetch, clock).getToken());

    expect(error).toMatchObject({ code: 'upstream_unavailable', status: 503, retryAfter: 2 });
    expect(sent).toHaveLength(3);
    expect(clock.sleeps).toEqual([1000, 1000]);
  });

  it('gives a retry after a quick 503 as long as a first attempt, by default', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const clock = fakeClock();
      const { fetch, sent } = scriptedFetch(unavailable('1'), slowTokenAnswer(clock, 25_000));
      const pending = client(fetch, clock).getToken();
      while (sent.length < 2) await new Promise((resolve) => setImmediate(resolve));
      await vi.advanceTimersByTimeAsync(25_000);

      await expect(pending).resolves.toMatchObject({ accessToken: SECRET_TOKEN });
    } finally {
      vi.useRealTimers();
    }
  });

  it('does not wait past the retry budget', async () => {
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch(unavailable('6'), unavailable('6'));

    const error = await caught(client(fetch, clock, { retryBudgetMs: 10_000 }).getToken());

    expect(error.retryAfter).toBe(6);
    expect(sent).toHaveLength(2);
    expect(clock.sleeps).toEqual([6000]);
  });

  it('does not retry with maxRetries 0', async () => {
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch(unavailable('1'));

    await caught(client(fetch, clock, { maxRetries: 0 }).getToken());

    expect(sent).toHaveLength(1);
  });

  it.each([
    [400, 'invalid_request'],
    [403, 'access_denied'],
    [502, 'upstream_credentials_rejected'],
  ])('never retries a %i (%s)', async (status, code) => {
    const clock = fakeClock();
    const { fetch, sent } = scriptedFetch(problem(status, code, 'x'));

    const error = await caught(client(fetch, clock).getToken());

    expect(error.code).toBe(code);
    expect(sent).toHaveLength(1);
  });
});
