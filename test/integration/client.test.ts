/**
 * The client library against the local stack, in-process, with real SigV4
 * signatures checked by the local Function URL. Requests are counted with a
 * wrapping fetch; time is injected so that retries never really wait.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Logger } from '@aws-lambda-powertools/logger';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import {
  type ClientClock,
  type FetchFunction,
  TokenVendingClient,
  TokenVendingError,
} from '../../client/index.js';
import { DEMO_IDENTITY, type LocalIdentity } from '../../local/local-identities.js';
import { type LocalStack, startLocalStack } from '../../local/stack.js';

const OUTSIDER: LocalIdentity = {
  accessKeyId: 'AKIALOCALOUTSIDER001',
  secretAccessKey: 'localOutsiderSecretAccessKey000000000000',
  arn: 'arn:aws:iam::000000000000:role/outsider',
};

/** Temporary credentials of another local-demo session: they sign with their session token. */
const SESSION: LocalIdentity = {
  accessKeyId: 'ASIALOCALSESSION0001',
  secretAccessKey: 'sessionSecretAccessKey000000000000000000',
  sessionToken: 'IQoJb3JpZ2luX2VjEXAMPLE/session+token==',
  arn: 'arn:aws:sts::000000000000:assumed-role/local-demo/client-session',
};

/** Grants everything to the demo identity (a session of role local-demo) and nothing to the outsider. */
const POLICY = JSON.stringify({
  scopes: ['ba_demo_1', 'ba_demo_2'],
  grants: [
    { principal: 'arn:aws:iam::000000000000:role/local-demo', scopes: ['*'], unscoped: true },
  ],
});

let tables = 0;
function startStack(): Promise<LocalStack> {
  tables += 1;
  return startLocalStack(
    {
      PORT: '0',
      DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'),
      TABLE_NAME: `client-${process.pid}-${Date.now()}-${tables}`,
      LOCAL_IDENTITIES: JSON.stringify([DEMO_IDENTITY, OUTSIDER, SESSION]),
      ACCESS_POLICY: POLICY,
    },
    { stackFile: null, logger: new Logger({ serviceName: 'client-test', logLevel: 'SILENT' }) },
  );
}

/** A fetch that counts the requests it sends. */
function countingFetch(): { fetch: FetchFunction; urls: string[] } {
  const urls: string[] = [];
  return {
    urls,
    fetch: (input, init) => {
      urls.push(input);
      return fetch(input, init);
    },
  };
}

/** A clock `offsetMs` ahead of real time whose sleep records and skips the wait. */
function skippingClock(): ClientClock & { offsetMs: number; sleeps: number[] } {
  const clock = {
    offsetMs: 0,
    sleeps: [] as number[],
    now: () => Date.now() + clock.offsetMs,
    sleep: async (ms: number) => {
      clock.sleeps.push(ms);
      clock.offsetMs += ms;
    },
  };
  return clock;
}

async function caught(promise: Promise<unknown>): Promise<TokenVendingError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TokenVendingError);
  return error as TokenVendingError;
}

/** The simulator's tokens all start with `sim_`: none may reach an error message. */
function expectNoToken(error: TokenVendingError): void {
  expect(error.message).not.toMatch(/sim_/);
  expect(JSON.stringify({ ...error, message: error.message })).not.toMatch(/sim_/);
}

describe('TokenVendingClient against the local stack', () => {
  let stack: LocalStack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => stack?.stop());

  const client = (
    options: { identity?: LocalIdentity; fetch?: FetchFunction; clock?: ClientClock } = {},
  ) =>
    new TokenVendingClient({
      url: stack.info.functionUrl,
      credentials: options.identity ?? DEMO_IDENTITY,
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.clock ? { clock: options.clock } : {}),
    });

  it('gets a scoped token through the SigV4-checking Function URL', async () => {
    const token = await client().getToken({ scope: 'ba_demo_1' });

    expect(token).toMatchObject({ tokenType: 'Bearer', scope: 'ba_demo_1' });
    expect(token.accessToken).toMatch(/^sim_/);
    expect(token.expiresAt).toBeGreaterThan(Date.now() / 1000 + 7000);
  });

  it('gets the unscoped token, and builds the Authorization header', async () => {
    const vending = client();

    const token = await vending.getToken();
    const header = await vending.authorizationHeader();

    expect(token.scope).toBeUndefined();
    expect(header).toBe(`Bearer ${token.accessToken}`);
  });

  it('gets what the caller is granted from GET /grants, and nothing for an outsider', async () => {
    const granted = await client({ identity: SESSION }).getGrants();
    const outsider = await client({ identity: OUTSIDER }).getGrants();

    expect(granted).toMatchObject({
      principal: SESSION.arn,
      scopes: ['ba_demo_1', 'ba_demo_2'],
      unscoped: true,
    });
    expect(outsider).toMatchObject({ principal: OUTSIDER.arn, scopes: [], unscoped: false });
  });

  it('signs with the session token of temporary credentials', async () => {
    const { accessKeyId, secretAccessKey } = SESSION;

    const token = await client({ identity: SESSION }).getToken({ scope: 'ba_demo_1' });
    const error = await caught(
      client({ identity: { accessKeyId, secretAccessKey, arn: SESSION.arn } }).getToken(),
    );

    expect(token.scope).toBe('ba_demo_1');
    expect(error).toMatchObject({ code: 'access_denied', status: 403 });
  });

  it('serves a second call from its cache without a request', async () => {
    const counter = countingFetch();
    const vending = client({ fetch: counter.fetch });

    const first = await vending.getToken({ scope: 'ba_demo_1' });
    const second = await vending.getToken({ scope: 'ba_demo_1' });

    expect(second).toBe(first);
    expect(counter.urls).toHaveLength(1);
    expect(counter.urls[0]).toBe(`${stack.info.functionUrl}/token?min_ttl=300&scope=ba_demo_1`);
  });

  it('asks again once the cached token has minTtl seconds or less left', async () => {
    const counter = countingFetch();
    const clock = skippingClock();
    const vending = client({ fetch: counter.fetch, clock });
    const first = await vending.getToken({ scope: 'ba_demo_1' });

    clock.offsetMs = (first.expiresAt - 300) * 1000 - Date.now();
    await vending.getToken({ scope: 'ba_demo_1' });

    expect(counter.urls).toHaveLength(2);
  });

  it('makes one request for 100 concurrent calls of one scope', async () => {
    const counter = countingFetch();
    const vending = client({ fetch: counter.fetch });

    const tokens = await Promise.all(
      Array.from({ length: 100 }, () => vending.getToken({ scope: 'ba_demo_2' })),
    );

    expect(counter.urls).toHaveLength(1);
    expect(new Set(tokens.map((t) => t.accessToken)).size).toBe(1);
  });

  it('surfaces the access policy 403 as access_denied, and caches no error', async () => {
    const counter = countingFetch();
    const vending = client({ identity: OUTSIDER, fetch: counter.fetch });

    const error = await caught(vending.getToken({ scope: 'ba_demo_1' }));
    await caught(vending.getToken({ scope: 'ba_demo_1' }));

    expect(error).toMatchObject({
      name: 'TokenVendingError',
      code: 'access_denied',
      status: 403,
      title: 'Access denied',
      message: 'access_denied: Access denied',
    });
    expect(counter.urls).toHaveLength(2);
    expectNoToken(error);
  });

  it("surfaces the Function URL's own 403 to a bad signature as access_denied", async () => {
    const vending = client({
      identity: { ...DEMO_IDENTITY, secretAccessKey: 'not-the-secret' },
    });

    const error = await caught(vending.getToken({ scope: 'ba_demo_1' }));

    expect(error).toMatchObject({ code: 'access_denied', status: 403 });
    expect(error.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expectNoToken(error);
  });

  it('does not retry a 4xx', async () => {
    const counter = countingFetch();
    const clock = skippingClock();
    const vending = client({ fetch: counter.fetch, clock });

    const error = await caught(vending.getToken({ scope: 'ba_not_configured' }));

    expect(error).toMatchObject({ code: 'access_denied', status: 403 });
    expect(counter.urls).toHaveLength(1);
    expect(clock.sleeps).toEqual([]);
  });

  it('reports an unreachable URL as network_error', async () => {
    const closed = createServer();
    await new Promise<void>((listening) => closed.listen(0, '127.0.0.1', listening));
    const { port } = closed.address() as AddressInfo;
    await new Promise((done) => closed.close(done));
    const vending = new TokenVendingClient({
      url: `http://127.0.0.1:${port}`,
      credentials: DEMO_IDENTITY,
    });

    const error = await caught(vending.getToken());

    expect(error).toMatchObject({ code: 'network_error', status: 0 });
    expect(error.cause).toBeDefined();
  });
});

describe('TokenVendingClient when the vend URL answers 503', () => {
  let stack: LocalStack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => stack?.stop());
  afterEach(() => {
    vi.useRealTimers();
    stack.simulator?.clearFaults();
  });

  /**
   * The stack runs in this process on real time. A fake Date lets the client's
   * sleep move every clock in the process (stack included) forward instead of waiting.
   */
  function dateAdvancingClock(): { clock: ClientClock; sleeps: number[] } {
    vi.useFakeTimers({ toFake: ['Date'] });
    const sleeps: number[] = [];
    const clock: ClientClock = {
      now: () => Date.now(),
      sleep: async (ms) => {
        sleeps.push(ms);
        vi.setSystemTime(Date.now() + ms);
      },
    };
    return { clock, sleeps };
  }

  it('waits as Retry-After asks, then gets the token', async () => {
    // After a failed refresh the stack answers 503 for 5 s.
    const { clock, sleeps } = dateAdvancingClock();
    const sim = stack.simulator;
    if (!sim) throw new Error('the stack started no simulator');
    // Three provider 503s exhaust the vend function's own retries: it answers 503.
    sim.injectTokenFault({ kind: 'status', status: 503 }, 3);
    const counter = countingFetch();
    const answers: number[] = [];
    const vending = new TokenVendingClient({
      url: stack.info.functionUrl,
      credentials: DEMO_IDENTITY,
      clock,
      fetch: async (input, init) => {
        const response = await counter.fetch(input, init);
        answers.push(response.status);
        return response;
      },
    });

    const token = await vending.getToken({ scope: 'ba_demo_1' });

    expect(token.scope).toBe('ba_demo_1');
    expect(answers).toEqual([503, 200]);
    expect(sleeps).toHaveLength(1);
    expect(sleeps[0]).toBeGreaterThanOrEqual(5000);
    expect(sim.stats.tokenRequests).toBe(4);
  });

  it('gives up with upstream_unavailable after two retries', async () => {
    const { clock, sleeps } = dateAdvancingClock();
    stack.simulator?.injectTokenFault({ kind: 'status', status: 503 }, Number.POSITIVE_INFINITY);
    const counter = countingFetch();
    const vending = new TokenVendingClient({
      url: stack.info.functionUrl,
      credentials: DEMO_IDENTITY,
      clock,
      fetch: counter.fetch,
      retryBudgetMs: 15_000,
    });

    const error = await caught(vending.getToken({ scope: 'ba_demo_2' }));

    expect(error).toMatchObject({ code: 'upstream_unavailable', status: 503, retryAfter: 5 });
    expect(counter.urls).toHaveLength(3);
    expect(sleeps).toEqual([5000, 5000]);
    expectNoToken(error);
  });
});

describe('TokenVendingClient against a URL that never answers', () => {
  let server: Server;
  let url: string;
  beforeAll(async () => {
    server = createServer(() => {
      // Never answers.
    });
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((done) => server.close(done));
  });

  it('gives up after timeoutMs with a timeout error', async () => {
    const vending = new TokenVendingClient({ url, credentials: DEMO_IDENTITY, timeoutMs: 100 });
    const started = Date.now();

    const error = await caught(vending.getToken({ scope: 'ba_demo_1' }));

    expect(error).toMatchObject({ code: 'timeout', status: 0 });
    expect(error.message).toBe(`timeout: No answer from ${new URL(url).host} within 100 ms`);
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
