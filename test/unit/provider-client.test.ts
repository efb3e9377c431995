import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Clock } from '../../functions/core/clock.js';
import { UpstreamError, VendError } from '../../functions/core/errors.js';
import type { ProviderCredentials } from '../../functions/core/ports.js';
import {
  MAX_ACCESS_TOKEN_LENGTH,
  MAX_EXPIRES_IN_SECONDS,
  MAX_TOKEN_RESPONSE_BYTES,
  type ProviderClientConfig,
  type ProviderClientDeps,
  requestToken,
  retryAfterSeconds,
} from '../../functions/core/provider-client.js';
import {
  DEMO_PROVIDER_CREDENTIALS,
  type ProviderSimulator,
  startProviderSimulator,
  type TokenFault,
} from '../../local/provider-simulator.js';
import { startRedirectingServer } from '../support/redirecting-server.js';

const START_MS = Date.UTC(2030, 0, 1, 0, 0, 0, 789);
const CREDENTIALS: ProviderCredentials = { ...DEMO_PROVIDER_CREDENTIALS, version: 'v1' };
const BASIC = Buffer.from(`${CREDENTIALS.key}:${CREDENTIALS.secret}`).toString('base64');

/** A clock whose sleep returns at once, advancing itself and recording each wait. */
interface FakeClock extends Clock {
  readonly waits: number[];
}

function fakeClock(startMs = START_MS): FakeClock {
  let nowMs = startMs;
  const waits: number[] = [];
  return {
    waits,
    now: () => nowMs,
    sleep: async (ms) => {
      waits.push(ms);
      nowMs += ms;
    },
  };
}

let sim: ProviderSimulator;
let clock: FakeClock;
let deps: ProviderClientDeps;
let config: ProviderClientConfig;

beforeAll(async () => {
  sim = await startProviderSimulator({ now: () => START_MS });
});

afterAll(async () => {
  await sim.close();
});

beforeEach(() => {
  sim.reset();
  clock = fakeClock();
  deps = { fetch: globalThis.fetch, clock, random: () => 0.5 };
  config = { baseUrl: sim.url, unscopedScopeMode: 'omit' };
});

/** Awaits a rejection, checks it is a VendError free of secrets and tokens, and returns it. */
async function failure(promise: Promise<unknown>): Promise<VendError> {
  const error = await promise.then(
    () => {
      throw new Error('expected the request to fail');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(VendError);
  const texts = [
    (error as Error).message,
    JSON.stringify(error),
    inspect(error, { depth: 10, showHidden: true }),
  ];
  for (const text of texts) {
    expect(text).not.toContain(CREDENTIALS.secret);
    expect(text).not.toContain(BASIC);
    // Simulator tokens, the key and the secret all start with sim_.
    expect(text).not.toContain('sim_');
  }
  return error as VendError;
}

function injectFault(fault: TokenFault, times = 1): void {
  sim.injectTokenFault(fault, times);
}

describe('requestToken: successful requests', () => {
  it('requests a scoped token and returns the validated grant', async () => {
    // Act
    const grant = await requestToken(deps, config, CREDENTIALS, 'ba_demo_1');

    // Assess
    expect(grant).toEqual({
      accessToken: expect.stringMatching(/^sim_/),
      tokenType: 'Bearer',
      expiresIn: 7200,
      scope: 'ba_demo_1',
      createdAt: Math.floor(START_MS / 1000),
    });
    expect(sim.requests).toEqual([
      expect.objectContaining({
        endpoint: 'token',
        method: 'POST',
        scope: 'ba_demo_1',
        status: 200,
      }),
    ]);
    expect(clock.waits).toEqual([]);
  });

  it('tolerates a trailing slash on the base URL', async () => {
    // Prepare
    config = { ...config, baseUrl: `${sim.url}/` };

    // Act
    const grant = await requestToken(deps, config, CREDENTIALS, 'ba_demo_2');

    // Assess
    expect(grant.scope).toBe('ba_demo_2');
    expect(sim.requests[0]?.path).toBe('/oauth/token');
  });

  it("omits scope for the unscoped token in mode 'omit'", async () => {
    // Prepare
    sim.setOptions({ unscopedMode: 'omit' });

    // Act
    const grant = await requestToken(deps, config, CREDENTIALS, undefined);

    // Assess
    expect(grant.scope).toBeUndefined();
    expect(grant).not.toHaveProperty('scope');
    expect(grant.expiresIn).toBe(7200);
    expect(sim.requests[0]).not.toHaveProperty('scope');
    expect(sim.stats.tokenRequestsByScope).toEqual({ '': 1 });
  });

  it("sends scope empty for the unscoped token in mode 'empty'", async () => {
    // Prepare
    sim.setOptions({ unscopedMode: 'empty' });
    config = { ...config, unscopedScopeMode: 'empty' };

    // Act
    const grant = await requestToken(deps, config, CREDENTIALS, undefined);

    // Assess
    expect(grant).not.toHaveProperty('scope');
    expect(sim.requests[0]?.scope).toBe('');
    expect(sim.requests[0]?.status).toBe(200);
  });

  it("fails with upstream_error when the mode does not match the provider's, without retrying", async () => {
    // Prepare
    sim.setOptions({ unscopedMode: 'empty' });

    // Act
    const error = await failure(requestToken(deps, config, CREDENTIALS, undefined));

    // Assess
    expect(error).toMatchObject({ code: 'upstream_error', status: 502 });
    expect(sim.stats.tokenRequests).toBe(1);
  });

  it('normalises a created_at in milliseconds to seconds', async () => {
    // Prepare
    sim.setOptions({ createdAtUnit: 'ms' });

    // Act
    const grant = await requestToken(deps, config, CREDENTIALS, 'ba_demo_1');

    // Assess
    expect(grant.createdAt).toBe(Math.floor(START_MS / 1000));
  });

  it("uses the provider's expires_in, not a fixed lifetime", async () => {
    // Prepare
    sim.setOptions({ expiresIn: 600 });

    // Act
    const grant = await requestToken(deps, config, CREDENTIALS, 'ba_demo_1');

    // Assess
    expect(grant.expiresIn).toBe(600);
  });
});

describe('requestToken: answers that are not retried', () => {
  it('maps 401 for our key and secret to upstream_credentials_rejected, without retrying', async () => {
    // Prepare
    const wrong = { ...CREDENTIALS, secret: 'sim_wrong_secret' };

    // Act
    const error = await failure(requestToken(deps, config, wrong, 'ba_demo_1'));

    // Assess
    expect(error).toMatchObject({ code: 'upstream_credentials_rejected', status: 502 });
    expect(error.message).not.toContain('sim_wrong_secret');
    expect(sim.stats.tokenRequests).toBe(1);
    expect(clock.waits).toEqual([]);
  });

  it.each([401, 403])('maps an injected %i to upstream_credentials_rejected', async (status) => {
    // Prepare
    injectFault({ kind: 'status', status }, 3);

    // Act
    const error = await failure(requestToken(deps, config, CREDENTIALS, 'ba_demo_1'));

    // Assess
    expect(error).toMatchObject({ code: 'upstream_credentials_rejected', status: 502 });
    expect(sim.stats.tokenRequests).toBe(1);
  });

  it.each([400, 404, 415, 422])('maps %i to upstream_error without retrying', async (status) => {
    // Prepare
    injectFault({ kind: 'status', status }, 3);

    // Act
    const error = await failure(requestToken(deps, config, CREDENTIALS, 'ba_demo_1'));

    // Assess
    expect(error).toMatchObject({ code: 'upstream_error', status: 502 });
    expect(error.message).toBe(`The provider answered HTTP ${status}.`);
    expect(sim.stats.tokenRequests).toBe(1);
    expect(clock.waits).toEqual([]);
  });

  it.each([301, 302, 307, 308])(
    'regression: a %i is upstream_error, neither followed nor retried as an outage',
    async (status) => {
      // Prepare
      const redirecting = await startRedirectingServer(status);
      try {
        // Act
        const error = await failure(
          requestToken(deps, { ...config, baseUrl: redirecting.url }, CREDENTIALS, 'ba_demo_1'),
        );

        // Assess
        expect(error).toMatchObject({ code: 'upstream_error', status: 502 });
        expect(error.message).toBe(`The provider answered HTTP ${status}.`);
        expect(redirecting.answered()).toBe(1);
        expect(redirecting.followed).toEqual([]);
        expect(clock.waits).toEqual([]);
      } finally {
        await redirecting.close();
      }
    },
  );

  it('maps a scope the provider does not allow (its 400) to upstream_error', async () => {
    // Act
    const error = await failure(requestToken(deps, config, CREDENTIALS, 'ba_not_onboarded'));

    // Assess
    expect(error).toMatchObject({ code: 'upstream_error', status: 502 });
    expect(sim.stats.tokenRequests).toBe(1);
  });

  it.each<[string, TokenFault, string | undefined]>([
    ['a malformed body', { kind: 'malformed' }, 'ba_demo_1'],
    ['a wrong token_type', { kind: 'wrongTokenType' }, 'ba_demo_1'],
    ['a missing expires_in', { kind: 'missingExpiresIn' }, 'ba_demo_1'],
    ['expires_in 0', { kind: 'expiresIn', value: 0 }, 'ba_demo_1'],
    ['expires_in -5', { kind: 'expiresIn', value: -5 }, 'ba_demo_1'],
    ['expires_in 1.5', { kind: 'expiresIn', value: 1.5 }, 'ba_demo_1'],
    ['a wrong scope echo', { kind: 'wrongScope' }, 'ba_demo_1'],
    ['a scope echo on an unscoped request', { kind: 'wrongScope' }, undefined],
  ])('maps %s to upstream_error and never retries', async (_label, fault, scope) => {
    // Prepare: the fault stays for three requests, so a retry would show.
    injectFault(fault, 3);

    // Act
    const error = await failure(requestToken(deps, config, CREDENTIALS, scope));

    // Assess
    expect(error).toMatchObject({ code: 'upstream_error', status: 502, name: 'UpstreamError' });
    expect(sim.stats.tokenRequests).toBe(1);
    expect(clock.waits).toEqual([]);
  });

  it('names the missing field without quoting the body', async () => {
    // Prepare
    injectFault({ kind: 'missingExpiresIn' });

    // Act
    const error = await failure(requestToken(deps, config, CREDENTIALS, 'ba_demo_1'));

    // Assess
    expect(error.message).toContain('expires_in');
    expect(error.message).not.toContain('access_token');
  });
});

describe('requestToken: untrusted token responses (stubbed fetch)', () => {
  /** A well-formed answer for ba_demo_1; tests override one field. */
  const GOOD = {
    access_token: 'tok_Good-1.2~3+4/5==',
    token_type: 'Bearer',
    expires_in: 7200,
    scope: 'ba_demo_1',
  };

  /** Answers every request 200 with `body` as JSON; counts the requests. */
  function answer(body: Record<string, unknown>): { requests: () => number } {
    let requests = 0;
    deps = {
      ...deps,
      fetch: async () => {
        requests += 1;
        return new Response(JSON.stringify(body), {
          status: 200,
          headers: { 'content-type': 'application/json' },
        });
      },
    };
    return { requests: () => requests };
  }

  it.each([
    ['CR LF (header injection)', 'tok_x\r\nX-Injected: 1'],
    ['a lone LF', 'tok_x\ny'],
    ['a lone CR', 'tok_x\ry'],
    ['a space', 'tok_x y'],
    ['a tab', 'tok_x\ty'],
    ['a NUL', 'tok_x\u0000y'],
    ['DEL', 'tok_x\u007fy'],
    ['a double quote', 'tok_x"y'],
    ['a comma', 'tok_x,y'],
    ['a semicolon', 'tok_x;y'],
    ['a non-ASCII letter', 'tok_xéy'],
    ['a Unicode line separator', 'tok_x\u2028y'],
    ['"=" before the end', 'tok_x=y'],
    ['only "=" padding', '=='],
    ['nothing (empty)', ''],
    ['more than MAX_ACCESS_TOKEN_LENGTH characters', 'a'.repeat(MAX_ACCESS_TOKEN_LENGTH + 1)],
  ])(
    'regression: an access_token with %s is upstream_error, not retried, and not quoted',
    async (_label, token) => {
      // Prepare
      const provider = answer({ ...GOOD, access_token: token });

      // Act
      const error = await failure(requestToken(deps, config, CREDENTIALS, 'ba_demo_1'));

      // Assess
      expect(error).toMatchObject({ code: 'upstream_error', status: 502, name: 'UpstreamError' });
      expect(error.message).toBe('Malformed token response (access_token).');
      expect(inspect(error, { depth: 10, showHidden: true })).not.toContain('tok_x');
      expect(provider.requests()).toBe(1);
    },
  );

  it.each([
    ['every b64token character', 'AZaz09-._~+/=='],
    ['exactly MAX_ACCESS_TOKEN_LENGTH characters', 'a'.repeat(MAX_ACCESS_TOKEN_LENGTH)],
  ])('accepts an access_token with %s', async (_label, token) => {
    // Prepare
    answer({ ...GOOD, access_token: token });

    // Act
    const grant = await requestToken(deps, config, CREDENTIALS, 'ba_demo_1');

    // Assess
    expect(grant.accessToken).toBe(token);
  });

  it.each([MAX_EXPIRES_IN_SECONDS + 1, 1e9, 1e300])(
    'regression: an absurd expires_in of %d is upstream_error, not retried',
    async (expiresIn) => {
      // Prepare
      const provider = answer({ ...GOOD, expires_in: expiresIn });

      // Act
      const error = await failure(requestToken(deps, config, CREDENTIALS, 'ba_demo_1'));

      // Assess
      expect(error).toMatchObject({ code: 'upstream_error', status: 502 });
      expect(error.message).toBe('Malformed token response (expires_in).');
      expect(provider.requests()).toBe(1);
    },
  );

  it('accepts expires_in of exactly MAX_EXPIRES_IN_SECONDS (7 days)', async () => {
    // Prepare
    answer({ ...GOOD, expires_in: MAX_EXPIRES_IN_SECONDS });

    // Act
    const grant = await requestToken(deps, config, CREDENTIALS, 'ba_demo_1');

    // Assess
    expect(MAX_EXPIRES_IN_SECONDS).toBe(604_800);
    expect(grant.expiresIn).toBe(MAX_EXPIRES_IN_SECONDS);
  });

  it('regression: an endless answer is not buffered; past MAX_TOKEN_RESPONSE_BYTES it is upstream_error', async () => {
    // Prepare: a body that never ends (whitespace, then it would be valid JSON)
    let pulled = 0;
    deps = {
      ...deps,
      fetch: async () =>
        new Response(
          new ReadableStream<Uint8Array>({
            pull(controller) {
              pulled += 64 * 1024;
              controller.enqueue(new Uint8Array(64 * 1024).fill(0x20));
            },
          }),
          { status: 200, headers: { 'content-type': 'application/json' } },
        ),
    };

    // Act
    const error = await requestToken(deps, config, CREDENTIALS, 'ba_demo_1').catch(
      (e: unknown) => e,
    );

    // Assess
    expect(error).toMatchObject({ code: 'upstream_error', name: 'UpstreamError' });
    expect(pulled).toBeLessThanOrEqual(4 * 64 * 1024);
    expect(MAX_TOKEN_RESPONSE_BYTES).toBe(16 * 1024);
  });

  it('reads an answer up to MAX_TOKEN_RESPONSE_BYTES', async () => {
    answer({ ...GOOD, padding: ' '.repeat(MAX_TOKEN_RESPONSE_BYTES - 200) });

    const grant = await requestToken(deps, config, CREDENTIALS, 'ba_demo_1');

    expect(grant.accessToken).toBe(GOOD.access_token);
  });

  it('regression (interop): a scoped response without a scope echo is upstream_error, not taken as the requested scope', async () => {
    // oidc-provider drops a scope it does not know and answers a token with no
    // scope at all: taking silence for the requested scope served an unscoped
    // token as a scoped one.
    const { scope: _omitted, ...withoutScope } = GOOD;
    answer(withoutScope);

    const failure = requestToken(deps, config, CREDENTIALS, 'ba_demo_1');

    await expect(failure).rejects.toBeInstanceOf(UpstreamError);
    await expect(failure).rejects.toMatchObject({ code: 'upstream_error' });
  });
});

describe('requestToken: retries', () => {
  it('succeeds after two 500s, with exponential backoff between attempts', async () => {
    // Prepare
    injectFault({ kind: 'status', status: 500 }, 2);

    // Act
    const grant = await requestToken(deps, config, CREDENTIALS, 'ba_demo_1');

    // Assess
    expect(grant.scope).toBe('ba_demo_1');
    expect(sim.stats.tokenRequests).toBe(3);
    expect(sim.requests.map((r) => r.status)).toEqual([500, 500, 200]);
    // random 0.5 x base 200 ms x 2^attempt.
    expect(clock.waits).toEqual([100, 200]);
  });

  it('regression: a 5xx without Retry-After backs off, instead of waiting 5 s', async () => {
    // Prepare
    injectFault({ kind: 'status', status: 502 });

    // Act
    await requestToken(deps, config, CREDENTIALS, 'ba_demo_1');

    // Assess
    expect(clock.waits).toEqual([100]);
  });

  it('gives up with upstream_unavailable after exactly three 503s', async () => {
    // Prepare
    injectFault({ kind: 'status', status: 503 }, 3);
    injectFault({ kind: 'status', status: 400 }, Number.POSITIVE_INFINITY);

    // Act
    const error = await failure(requestToken(deps, config, CREDENTIALS, 'ba_demo_1'));

    // Assess
    expect(error).toMatchObject({ code: 'upstream_unavailable', status: 503 });
    expect(error.message).toBe('The provider answered HTTP 503.');
    expect(sim.stats.tokenRequests).toBe(3);
    expect(clock.waits).toHaveLength(2);
  });

  it('makes 1 + maxRetries attempts', async () => {
    // Prepare
    injectFault({ kind: 'status', status: 503 }, Number.POSITIVE_INFINITY);
    config = { ...config, maxRetries: 4 };

    // Act
    const error = await failure(requestToken(deps, config, CREDENTIALS, 'ba_demo_1'));

    // Assess
    expect(error.code).toBe('upstream_unavailable');
    expect(sim.stats.tokenRequests).toBe(5);
    expect(clock.waits).toEqual([100, 200, 400, 800]);
  });

  it('honours Retry-After on a 429', async () => {
    // Prepare
    injectFault({ kind: 'status', status: 429, retryAfter: 2 });

    // Act
    const grant = await requestToken(deps, config, CREDENTIALS, 'ba_demo_1');

    // Assess
    expect(grant.scope).toBe('ba_demo_1');
    expect(sim.stats.tokenRequests).toBe(2);
    expect(clock.waits).toHaveLength(1);
    expect(clock.waits[0]).toBeGreaterThanOrEqual(2000);
  });

  it('waits out an HTTP-date Retry-After to its second: a part second left counts whole', async () => {
    // Prepare: the provider asks for 4 s from the start of our current second;
    // 3.211 s of it are left, and a retry at 3 s would come before its date.
    const dateMs = START_MS - (START_MS % 1000) + 4000;
    let answered = false;
    deps = {
      ...deps,
      fetch: async (input, init) => {
        if (answered) return globalThis.fetch(input, init);
        answered = true;
        const headers = { 'retry-after': new Date(dateMs).toUTCString() };
        return new Response(null, { status: 503, headers });
      },
    };

    // Act
    await requestToken(deps, config, CREDENTIALS, 'ba_demo_1');

    // Assess
    expect(clock.waits).toEqual([4000]);
    expect(START_MS + (clock.waits[0] ?? 0)).toBeGreaterThanOrEqual(dateMs);
  });

  it('waits out a Retry-After of exactly 5 s', async () => {
    // Prepare
    injectFault({ kind: 'status', status: 429, retryAfter: 5 });

    // Act
    await requestToken(deps, config, CREDENTIALS, 'ba_demo_1');

    // Assess
    expect(sim.stats.tokenRequests).toBe(2);
    expect(clock.waits).toEqual([5000]);
  });

  it('regression: a Retry-After over 5 s ends the attempts, not retried early; the caller gets the hint', async () => {
    // Prepare
    injectFault({ kind: 'status', status: 429, retryAfter: 30 });

    // Act
    const error = await failure(requestToken(deps, config, CREDENTIALS, 'ba_demo_1'));

    // Assess
    expect(error).toMatchObject({ code: 'upstream_unavailable', status: 503, retryAfter: 30 });
    expect(sim.stats.tokenRequests).toBe(1);
    expect(clock.waits).toEqual([]);
  });

  it('gives up with upstream_unavailable after three 429s', async () => {
    // Prepare
    injectFault({ kind: 'status', status: 429, retryAfter: 1 }, 3);

    // Act
    const error = await failure(requestToken(deps, config, CREDENTIALS, 'ba_demo_1'));

    // Assess
    expect(error).toMatchObject({ code: 'upstream_unavailable', status: 503, retryAfter: 1 });
    expect(sim.stats.tokenRequests).toBe(3);
    expect(clock.waits).toEqual([1000, 1000]);
  });

  it('retries a request that hangs past the timeout, then gives up', async () => {
    // Prepare
    injectFault({ kind: 'hang' }, 3);
    config = { ...config, timeoutMs: 100, maxRetries: 2 };

    // Act
    const error = await failure(requestToken(deps, config, CREDENTIALS, 'ba_demo_1'));

    // Assess
    expect(error).toMatchObject({ code: 'upstream_unavailable', status: 503 });
    expect(error.message).toBe('The provider did not answer in time.');
    expect(sim.stats.tokenRequests).toBe(3);
  });

  it('succeeds when a hanging request is followed by an answer', async () => {
    // Prepare
    injectFault({ kind: 'hang' });
    config = { ...config, timeoutMs: 100 };

    // Act
    const grant = await requestToken(deps, config, CREDENTIALS, 'ba_demo_1');

    // Assess
    expect(grant.scope).toBe('ba_demo_1');
    expect(sim.stats.tokenRequests).toBe(2);
  });

  it('retries network errors, then fails with upstream_unavailable', async () => {
    // Prepare: a port that was just free and is closed again.
    const port = await closedPort();
    config = { ...config, baseUrl: `http://127.0.0.1:${port}` };

    // Act
    const error = await failure(requestToken(deps, config, CREDENTIALS, 'ba_demo_1'));

    // Assess
    expect(error).toMatchObject({ code: 'upstream_unavailable', status: 503 });
    expect(error.message).toBe('The provider could not be reached.');
    expect(clock.waits).toEqual([100, 200]);
  });

  it('regression: a body that stalls past the timeout is upstream_unavailable, not upstream_error', async () => {
    // Prepare: headers arrive at once, the body never completes.
    const stalling = await listen(
      createServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"access_token":');
      }),
    );
    config = { ...config, baseUrl: stalling.url, timeoutMs: 100, maxRetries: 1 };

    try {
      // Act
      const error = await failure(requestToken(deps, config, CREDENTIALS, 'ba_demo_1'));

      // Assess
      expect(error).toMatchObject({ code: 'upstream_unavailable', status: 503 });
      expect(stalling.requests()).toBe(2);
    } finally {
      await stalling.close();
    }
  });
});

describe('requestToken: deadline', () => {
  it('makes one request only when the deadline leaves no room for a retry', async () => {
    // Prepare
    injectFault({ kind: 'status', status: 503 }, 3);
    const deadlineMs = START_MS + 3000;

    // Act
    const error = await failure(requestToken(deps, config, CREDENTIALS, 'ba_demo_1', deadlineMs));

    // Assess
    expect(error.code).toBe('upstream_unavailable');
    expect(sim.stats.tokenRequests).toBe(1);
    expect(clock.waits).toEqual([]);
  });

  it('starts a retry only when it can finish before the deadline', async () => {
    // Prepare: room for the first backoff (100 ms) and a 3 s attempt, not for the second.
    injectFault({ kind: 'status', status: 503 }, 3);
    const deadlineMs = START_MS + 100 + 3000 + 150;

    // Act
    const error = await failure(requestToken(deps, config, CREDENTIALS, 'ba_demo_1', deadlineMs));

    // Assess
    expect(error.code).toBe('upstream_unavailable');
    expect(sim.stats.tokenRequests).toBe(2);
    expect(clock.waits).toEqual([100]);
  });

  it('sends nothing once the deadline has passed', async () => {
    // Act
    const error = await failure(requestToken(deps, config, CREDENTIALS, 'ba_demo_1', START_MS - 1));

    // Assess
    expect(error.code).toBe('upstream_unavailable');
    expect(sim.stats.tokenRequests).toBe(0);
  });

  it('sends nothing when the deadline is now: no time is left for an answer', async () => {
    // Prepare
    let sent = 0;
    deps = {
      ...deps,
      fetch: (input, init) => {
        sent++;
        return globalThis.fetch(input, init);
      },
    };

    // Act
    const error = await failure(requestToken(deps, config, CREDENTIALS, 'ba_demo_1', START_MS));

    // Assess
    expect(error.code).toBe('upstream_unavailable');
    expect(sent).toBe(0);
  });

  it("cuts an attempt's timeout to the time left before the deadline", async () => {
    // Regression (review): the first attempt always waited its full 3 s, so a
    // lease holder that learned of its lease late could still be asking the
    // provider after its lease ran out, when another instance may take over.
    injectFault({ kind: 'latency', ms: 1000 });
    const deadlineMs = START_MS + 50;

    // Act: the provider would answer in 1 s, within the 3 s timeout, but past the deadline
    const error = await failure(requestToken(deps, config, CREDENTIALS, 'ba_demo_1', deadlineMs));

    // Assess
    expect(error.code).toBe('upstream_unavailable');
    expect(error.message).toBe('The provider did not answer in time.');
    expect(sim.stats.tokenRequests).toBe(1);
  });

  it('does not wait out a Retry-After that would pass the deadline', async () => {
    // Prepare
    injectFault({ kind: 'status', status: 429, retryAfter: 4 });
    const deadlineMs = START_MS + 5000;

    // Act
    const error = await failure(requestToken(deps, config, CREDENTIALS, 'ba_demo_1', deadlineMs));

    // Assess
    expect(error.code).toBe('upstream_unavailable');
    expect(sim.stats.tokenRequests).toBe(1);
  });
});

describe('retryAfterSeconds', () => {
  it('reads delta-seconds and HTTP dates, and ignores garbage', () => {
    // Prepare
    const nowMs = Date.UTC(2030, 0, 1, 0, 0, 0);
    const response = (value?: string): Response =>
      new Response(null, { status: 503, headers: value ? { 'retry-after': value } : {} });

    // Act
    const results = [
      retryAfterSeconds(response('7'), nowMs),
      retryAfterSeconds(response(new Date(nowMs + 2500).toUTCString()), nowMs),
      retryAfterSeconds(response(new Date(nowMs - 60_000).toUTCString()), nowMs),
      retryAfterSeconds(response('soon'), nowMs),
      retryAfterSeconds(response(), nowMs),
    ];

    // Assess: toUTCString drops the milliseconds, so 2.5 s becomes 2 s.
    expect(results).toEqual([7, 2, 0, undefined, undefined]);
  });

  it.each(['-5', '1.5', '+3', '0x10', '12:30'])(
    'regression: %j is no Retry-After (Date.parse read such numbers as dates)',
    (value) => {
      const response = new Response(null, { status: 503, headers: { 'retry-after': value } });

      expect(retryAfterSeconds(response, Date.UTC(2030, 0, 1))).toBeUndefined();
    },
  );
});

/** Listens on a free loopback port and closes again, returning the port. */
async function closedPort(): Promise<number> {
  const server = await listen(createServer());
  await server.close();
  return server.port;
}

async function listen(server: Server): Promise<{
  url: string;
  port: number;
  requests: () => number;
  close: () => Promise<void>;
}> {
  let count = 0;
  server.on('request', () => {
    count += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests: () => count,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
