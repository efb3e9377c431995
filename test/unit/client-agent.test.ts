/**
 * `tvm agent`'s server in-process: the vend URL is a scripted fetch (requests
 * really signed), the agent a real HTTP server on loopback.
 */
import { createHash } from 'node:crypto';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { AGENT_TOKEN_HEADER, type RunningAgent, startAgent } from '../../client/agent.js';
import { type FetchFunction, TokenVendingClient } from '../../client/index.js';
import { AGENT_TOKEN, CREDENTIALS, clock, NOW, URL_EU, vendUrl } from '../support/scripted-vend.js';

const fingerprint = (token: string) =>
  createHash('sha256').update(token, 'utf8').digest('hex').slice(0, 16);

let agent: RunningAgent | undefined;
let logged: string[] = [];

async function agentWith(fetch: FetchFunction): Promise<RunningAgent> {
  logged = [];
  const client = new TokenVendingClient({ url: URL_EU, credentials: CREDENTIALS, fetch, clock });
  agent = await startAgent({
    client,
    agentToken: AGENT_TOKEN,
    port: 0,
    clock,
    log: (line) => logged.push(JSON.stringify(line)),
  });
  return agent;
}

afterEach(async () => {
  clock.ms = NOW;
  await agent?.close();
  agent = undefined;
});

async function get(
  path: string,
  headers: Record<string, string> = { [AGENT_TOKEN_HEADER]: AGENT_TOKEN },
  method = 'GET',
) {
  const response = await fetch(`${agent?.url}${path}`, { method, headers });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text ? JSON.parse(text) : undefined,
  };
}

describe('the agent server', () => {
  it('listens on 127.0.0.1 only', async () => {
    const { url } = await agentWith(vendUrl().fetch);

    expect(new URL(url).hostname).toBe('127.0.0.1');
  });

  it("answers GET /token with the vend API's body and headers", async () => {
    await agentWith(vendUrl().fetch);

    const answer = await get('/token?scope=ba_1&min_ttl=600');

    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('application/json');
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(answer.body).toEqual({
      access_token: 'tok_1_secret',
      token_type: 'Bearer',
      expires_in: 7200,
      expires_at: NOW / 1000 + 7200,
      scope: 'ba_1',
    });
  });

  it('serves every caller from one cache: one vend request for many callers of a scope', async () => {
    const vend = vendUrl();
    await agentWith(vend.fetch);

    const answers = await Promise.all(Array.from({ length: 10 }, () => get('/token?scope=ba_1')));
    const later = await get('/token?scope=ba_1');
    const unscoped = await get('/token');

    expect(answers.map((a) => a.body.access_token)).toEqual(Array(10).fill('tok_1_secret'));
    expect(later.body.access_token).toBe('tok_1_secret');
    expect(unscoped.body).not.toHaveProperty('scope');
    expect(vend.queries.map((q) => q.get('scope'))).toEqual(['ba_1', null]);
  });

  it('asks the vend URL again when the cached token has min_ttl seconds or less left', async () => {
    const vend = vendUrl();
    await agentWith(vend.fetch);
    await get('/token?scope=ba_1');
    clock.ms += 6900 * 1000; // 300 s left

    const answer = await get('/token?scope=ba_1&min_ttl=600');

    expect(answer.body.access_token).toBe('tok_2_secret');
    expect(vend.queries.map((q) => q.get('min_ttl'))).toEqual(['300', '600']);
  });

  it('replaces a token reported with revoked=<its fingerprint>, and reports it on', async () => {
    const vend = vendUrl();
    await agentWith(vend.fetch);
    await get('/token?scope=ba_1');

    const replaced = await get(`/token?scope=ba_1&revoked=${fingerprint('tok_1_secret')}`);
    const again = await get(`/token?scope=ba_1&revoked=${fingerprint('tok_1_secret')}`);

    expect(replaced.body.access_token).toBe('tok_2_secret');
    expect(again.body.access_token).toBe('tok_2_secret');
    expect(vend.queries[1]?.get('revoked')).toBe(fingerprint('tok_1_secret'));
    expect(vend.queries).toHaveLength(2);
  });

  it.each([
    ['no agent token header', {}, 401, 'unauthenticated'],
    ['a wrong agent token', { [AGENT_TOKEN_HEADER]: 'not-the-agent-token' }, 403, 'access_denied'],
    [
      'X-Forwarded-For',
      { [AGENT_TOKEN_HEADER]: AGENT_TOKEN, 'X-Forwarded-For': '203.0.113.7' },
      400,
      'invalid_request',
    ],
  ])(
    'refuses a request with %s, sending nothing to the vend URL',
    async (_label, headers, status, code) => {
      const vend = vendUrl();
      await agentWith(vend.fetch);

      const token = await get('/token?scope=ba_1', headers);
      const other = await get('/anything', headers);

      expect([token.status, token.body.code]).toEqual([status, code]);
      expect([other.status, other.body.code]).toEqual([status, code]);
      expect(token.headers.get('content-type')).toBe('application/problem+json');
      expect(vend.queries).toEqual([]);
    },
  );

  it('answers /healthz without the header, and no other path', async () => {
    await agentWith(vendUrl().fetch);

    expect(await get('/healthz', {})).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect((await get('/grants')).body.code).toBe('not_found');
  });

  it('answers 400 to a request target that is no URL, and keeps serving (no crash)', async () => {
    const vend = vendUrl();
    const { port } = await agentWith(vend.fetch);

    // Any process on the host can send this, without the agent token.
    const raw = await new Promise<string>((done, fail) => {
      let text = '';
      const socket = connect(port, '127.0.0.1', () =>
        socket.write('GET http://[ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
      );
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (text += chunk));
      socket.on('end', () => done(text));
      socket.on('error', fail);
    });

    expect(raw).toMatch(/^HTTP\/1\.1 400 /);
    expect(raw).toContain('"code":"invalid_request"');
    expect((await get('/token?scope=ba_1')).status).toBe(200);
  });

  it('answers 405 with Allow: GET to another method', async () => {
    await agentWith(vendUrl().fetch);

    const answer = await get('/token', { [AGENT_TOKEN_HEADER]: AGENT_TOKEN }, 'POST');

    expect(answer.status).toBe(405);
    expect(answer.headers.get('allow')).toBe('GET');
    expect(answer.body.code).toBe('method_not_allowed');
    // The vend API's body, detail included.
    expect(answer.body.detail).toBe('Use GET.');
  });

  it('regression: names a bad parameter in its own words, quoting nothing the caller sent, as the vend API does', async () => {
    await agentWith(vendUrl().fetch);

    const unknown = await get('/token?scope=ba_1&Bearer_abc123secret=1');
    const repeated = await get('/token?scope=ba_1&scope=ba_2');

    expect(unknown.body.detail).toBe('Unknown parameter; use scope, min_ttl and revoked.');
    expect(repeated.body.detail).toBe('Parameter "scope" is repeated.');
  });

  it.each([
    ['an unknown parameter', 'scope=ba_1&color=red'],
    ['a repeated parameter', 'scope=ba_1&scope=ba_2'],
    ['a bad scope', 'scope=-x'],
    ['a bad min_ttl', 'min_ttl=3601'],
    ['a bad revoked', 'revoked=xyz'],
  ])('answers 400 invalid_request to %s', async (_label, query) => {
    const vend = vendUrl();
    await agentWith(vend.fetch);

    const answer = await get(`/token?${query}`);

    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({
      status: 400,
      code: 'invalid_request',
      title: 'Invalid request',
    });
    expect(vend.queries).toEqual([]);
  });

  it("passes the vend API's problems on with their status and code", async () => {
    await agentWith(
      vendUrl(() =>
        Response.json(
          { status: 403, code: 'access_denied', title: 'Access denied', detail: 'not granted' },
          { status: 403 },
        ),
      ).fetch,
    );

    const answer = await get('/token?scope=ba_9');

    expect(answer).toMatchObject({
      status: 403,
      body: { status: 403, code: 'access_denied', title: 'Access denied', detail: 'not granted' },
    });
  });

  it('answers 503 upstream_unavailable, with Retry-After, when the vend URL cannot be reached', async () => {
    await agentWith(async () => {
      throw new TypeError('fetch failed');
    });

    const answer = await get('/token?scope=ba_1');

    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(answer.body).toMatchObject({
      code: 'upstream_unavailable',
      detail: expect.stringContaining('network_error'),
    });
  });

  it('logs one line per request, with the fingerprint and never a token or the agent token', async () => {
    await agentWith(vendUrl().fetch);
    await get('/token?scope=ba_1');
    await get('/token?scope=ba_1', {});

    const lines = logged.map((line) => JSON.parse(line));
    expect(lines).toMatchObject([
      {
        message: 'request',
        path: '/token',
        scope: 'ba_1',
        status: 200,
        fingerprint: fingerprint('tok_1_secret'),
      },
      { message: 'request', path: '/token', status: 401, code: 'unauthenticated' },
    ]);
    expect(logged.join('\n').includes('tok_1_secret')).toBe(false);
    expect(logged.join('\n').includes(AGENT_TOKEN)).toBe(false);
  });
});
