import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import type { LambdaFunctionURLEvent, LambdaFunctionURLEventWithIAMAuthorizer } from 'aws-lambda';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  type LocalFunctionUrl,
  startLocalFunctionUrl,
  type UrlHandler,
} from '../../local/function-url.js';
import { DEMO_IDENTITY, type LocalIdentity } from '../../local/local-identities.js';
import { type Query, type SignOptions, signRequest, wireQuery } from '../support/sigv4.js';

const run = promisify(execFile);
const hasCurl = !spawnSync('curl', ['--version'], { stdio: 'ignore' }).error;

const CHECKOUT: LocalIdentity = {
  accessKeyId: 'AKIALOCALCHECKOUT001',
  secretAccessKey: 'checkoutSecretAccessKey00000000000000000',
  arn: 'arn:aws:sts::111122223333:assumed-role/checkout/i-0abc',
};
/** Temporary credentials, as a role session has them. */
const SESSION: LocalIdentity & { sessionToken: string } = {
  accessKeyId: 'ASIALOCALSESSION0001',
  secretAccessKey: 'sessionSecretAccessKey000000000000000000',
  sessionToken: 'IQoJb3JpZ2luX2VjEXAMPLE/session+token==',
  arn: 'arn:aws:sts::111122223333:assumed-role/reporting/session-7',
};

let behaviour: (event: LambdaFunctionURLEvent) => ReturnType<UrlHandler> = async (event) => ({
  statusCode: 200,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(event),
});
const handler = vi.fn<UrlHandler>((event) => behaviour(event));

let local: LocalFunctionUrl;
let port: number;
const denied: string[] = [];

beforeAll(async () => {
  local = await startLocalFunctionUrl({
    handler,
    identities: [DEMO_IDENTITY, CHECKOUT, SESSION],
    onDenied: (reason) => denied.push(reason),
  });
  port = Number(new URL(local.url).port);
});
afterAll(() => local.close());
beforeEach(() => {
  handler.mockClear();
  denied.length = 0;
});

/** Signs with the SDK signer and sends with fetch. */
async function send(
  options: Partial<SignOptions> & { query?: Query } = {},
  rawQueryString?: string,
): Promise<Response> {
  const signed = await signRequest({ identity: DEMO_IDENTITY, port, ...options });
  const qs = rawQueryString ?? wireQuery(options.query ?? {});
  const { host: _host, ...headers } = signed.headers; // fetch sets Host itself
  return fetch(`${local.url}${signed.path}${qs ? `?${qs}` : ''}`, {
    method: signed.method,
    headers,
    ...(signed.body.length > 0 ? { body: signed.body } : {}),
  });
}

async function eventOf(response: Response): Promise<LambdaFunctionURLEventWithIAMAuthorizer> {
  expect(response.status).toBe(200);
  return (await response.json()) as LambdaFunctionURLEventWithIAMAuthorizer;
}

async function expectForbidden(response: Response): Promise<void> {
  expect(response.status).toBe(403);
  expect(response.headers.get('content-type')).toBe('application/json');
  expect(await response.text()).toBe('{"Message":"Forbidden"}');
  expect(handler).not.toHaveBeenCalled();
}

describe('local Function URL (AWS_IAM)', () => {
  it('invokes the handler with a payload 2.0 event carrying the IAM identity', async () => {
    const event = await eventOf(
      await send({
        query: { scope: 'ba_demo_1', min_ttl: '300' },
        headers: { 'user-agent': 'test-agent/1' },
      }),
    );
    expect(handler).toHaveBeenCalledTimes(1);
    expect(event.version).toBe('2.0');
    expect(event.routeKey).toBe('$default');
    expect(event.rawPath).toBe('/token');
    expect(event.rawQueryString).toBe('min_ttl=300&scope=ba_demo_1');
    expect(event.queryStringParameters).toEqual({ scope: 'ba_demo_1', min_ttl: '300' });
    expect(event.isBase64Encoded).toBe(false);
    expect(event.body).toBeUndefined();
    expect(event.cookies).toBeUndefined();
    expect(event.headers.host).toBe(`127.0.0.1:${port}`);
    expect(event.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(event.headers['x-amzn-trace-id']).toMatch(/^Root=1-[0-9a-f]{8}-[0-9a-f]{24}$/);
    const ctx = event.requestContext;
    expect(ctx.accountId).toBe('anonymous');
    expect(ctx.apiId).toMatch(/^[a-z0-9]{32}$/);
    expect(ctx.authorizer.iam).toEqual({
      accessKey: DEMO_IDENTITY.accessKeyId,
      accountId: '000000000000',
      callerId: expect.stringMatching(/^AROA[A-Z2-7]{17}:local-demo-session$/),
      cognitoIdentity: null,
      principalOrgId: null,
      userArn: 'arn:aws:sts::000000000000:assumed-role/local-demo/local-demo-session',
      userId: expect.stringMatching(/^AROA[A-Z2-7]{17}:local-demo-session$/),
    });
    expect(ctx.http).toEqual({
      method: 'GET',
      path: '/token',
      protocol: 'HTTP/1.1',
      sourceIp: '127.0.0.1',
      userAgent: 'test-agent/1',
    });
    expect(ctx.domainName).toBe('127.0.0.1');
    expect(ctx.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(ctx.routeKey).toBe('$default');
    expect(ctx.stage).toBe('$default');
    expect(ctx.time).toMatch(/^\d{2}\/[A-Z][a-z]{2}\/\d{4}:\d{2}:\d{2}:\d{2} \+0000$/);
    expect(Math.abs(ctx.timeEpoch - Date.now())).toBeLessThan(10_000);
  });

  it('names the assumed-role caller', async () => {
    const event = await eventOf(await send({ identity: CHECKOUT }));
    expect(event.requestContext.authorizer.iam.userArn).toBe(CHECKOUT.arn);
    expect(event.requestContext.authorizer.iam.accountId).toBe('111122223333');
    expect(event.requestContext.authorizer.iam.userId).toMatch(/^AROA[A-Z2-7]{17}:i-0abc$/);
  });

  describe('temporary credentials', () => {
    it('invokes the handler for a request carrying the session token', async () => {
      const event = await eventOf(
        await send({ identity: SESSION, sessionToken: SESSION.sessionToken }),
      );
      expect(event.requestContext.authorizer.iam.userArn).toBe(SESSION.arn);
      expect(event.requestContext.authorizer.iam.accessKey).toBe(SESSION.accessKeyId);
    });

    it('answers 403 without the session token, or with a wrong one', async () => {
      await expectForbidden(await send({ identity: SESSION }));
      await expectForbidden(
        await send({ identity: SESSION, sessionToken: `${SESSION.sessionToken}x` }),
      );
      expect(denied).toEqual([
        'missing X-Amz-Security-Token for temporary credentials',
        'X-Amz-Security-Token does not match',
      ]);
    });

    it('answers 403 to a session token sent with a long-term key', async () => {
      await expectForbidden(await send({ sessionToken: SESSION.sessionToken }));
      expect(JSON.stringify(denied)).not.toContain(SESSION.sessionToken);
    });
  });

  it('decodes query parameters and joins repeated ones with a comma', async () => {
    const event = await eventOf(
      await send({ query: { q: 'a b', c: 'x:y', t: 'a~b', p: '1+2', r: ['1', '2'] } }),
    );
    expect(event.rawQueryString).toBe('c=x%3Ay&p=1%2B2&q=a%20b&r=1&r=2&t=a~b');
    expect(event.queryStringParameters).toEqual({
      q: 'a b',
      c: 'x:y',
      t: 'a~b',
      p: '1+2',
      r: '1,2',
    });
  });

  it('accepts a query encoded differently from what was signed', async () => {
    const event = await eventOf(
      await send({ query: { q: 'a b', c: 'x:y', t: 'a~b' } }, 't=a%7Eb&q=a+b&c=x:y'),
    );
    expect(event.rawQueryString).toBe('t=a%7Eb&q=a+b&c=x:y');
    expect(event.queryStringParameters).toEqual({ q: 'a b', c: 'x:y', t: 'a~b' });
  });

  it('passes cookies, joined headers and a text body', async () => {
    const event = await eventOf(
      await send({
        method: 'POST',
        body: '{"hello":"world"}',
        headers: { 'content-type': 'application/json', cookie: 'a=1; b=2' },
      }),
    );
    expect(event.cookies).toEqual(['a=1', 'b=2']);
    expect(event.headers.cookie).toBeUndefined();
    expect(event.body).toBe('{"hello":"world"}');
    expect(event.isBase64Encoded).toBe(false);
  });

  it('base64-encodes a binary body', async () => {
    const bytes = new Uint8Array([0, 255, 1, 2]);
    const event = await eventOf(
      await send({
        method: 'PUT',
        body: bytes,
        headers: { 'content-type': 'application/octet-stream' },
      }),
    );
    expect(event.isBase64Encoded).toBe(true);
    expect(Buffer.from(event.body ?? '', 'base64')).toEqual(Buffer.from(bytes));
  });

  it('writes the handler result: status, headers, cookies, base64 body', async () => {
    behaviour = async () => ({
      statusCode: 201,
      headers: { 'x-custom': 'yes', 'content-type': 'application/octet-stream' },
      cookies: ['s=1; Path=/', 't=2'],
      body: Buffer.from([1, 2, 3]).toString('base64'),
      isBase64Encoded: true,
    });
    try {
      const response = await send();
      expect(response.status).toBe(201);
      expect(response.headers.get('x-custom')).toBe('yes');
      expect(response.headers.getSetCookie()).toEqual(['s=1; Path=/', 't=2']);
      expect(Buffer.from(await response.arrayBuffer())).toEqual(Buffer.from([1, 2, 3]));
    } finally {
      behaviour = async (event) => ({ statusCode: 200, body: JSON.stringify(event) });
    }
  });

  it('answers 502 without details when the handler throws', async () => {
    behaviour = async () => {
      throw new Error('secret detail');
    };
    try {
      const response = await send();
      expect(response.status).toBe(502);
      expect(await response.text()).toBe('{"Message":"Internal Server Error"}');
    } finally {
      behaviour = async (event) => ({ statusCode: 200, body: JSON.stringify(event) });
    }
  });

  it('answers 403 to an unsigned request', async () => {
    await expectForbidden(await fetch(`${local.url}/token?scope=ba_demo_1`));
    expect(denied).toEqual(['missing Authorization header']);
  });

  it('answers 403 to a wrong secret', async () => {
    await expectForbidden(await send({ secretAccessKey: 'y'.repeat(40) }));
  });

  it('answers 403 to an unknown access key', async () => {
    await expectForbidden(
      await send({ identity: { ...DEMO_IDENTITY, accessKeyId: 'AKIANOBODY0000000000' } }),
    );
  });

  it('answers 403 to a query tampered with after signing', async () => {
    await expectForbidden(await send({ query: { scope: 'ba_demo_1' } }, 'scope=ba_demo_2'));
  });

  it('answers 403 to the wrong region or service', async () => {
    await expectForbidden(await send({ region: 'eu-central-1' }));
    await expectForbidden(await send({ service: 'execute-api' }));
  });

  it('answers 403 to a stale X-Amz-Date', async () => {
    await expectForbidden(await send({ signingDate: new Date(Date.now() - 6 * 60_000) }));
    await expectForbidden(await send({ signingDate: new Date(Date.now() + 6 * 60_000) }));
  });

  it('never echoes the Authorization header in a 403', async () => {
    const signed = await signRequest({
      identity: DEMO_IDENTITY,
      port,
      secretAccessKey: 'z'.repeat(40),
    });
    const { host: _host, ...headers } = signed.headers;
    const response = await fetch(`${local.url}/token`, { headers });
    const text = await response.text();
    expect(text).not.toContain(headers.authorization?.slice(-64) ?? 'x');
    expect(JSON.stringify(denied)).not.toContain(DEMO_IDENTITY.secretAccessKey);
  });

  it('answers 413 to a body over 6 MB without calling the handler', async () => {
    const response = await fetch(`${local.url}/token`, {
      method: 'POST',
      body: new Uint8Array(6 * 1024 * 1024 + 1),
    }).catch((error: unknown) => error);
    // The server may close the connection while the client is still sending.
    if (response instanceof Response) expect(response.status).toBe(413);
    expect(handler).not.toHaveBeenCalled();
  });

  describe.skipIf(!hasCurl)('with curl --aws-sigv4', () => {
    const curl = async (
      secret: string,
      pathAndQuery: string,
      options: { accessKeyId?: string; headers?: string[] } = {},
    ) => {
      const { stdout } = await run('curl', [
        '-s',
        '-w',
        '\n%{http_code}',
        '--aws-sigv4',
        'aws:amz:us-east-1:lambda',
        '--user',
        `${options.accessKeyId ?? DEMO_IDENTITY.accessKeyId}:${secret}`,
        ...(options.headers ?? []).flatMap((header) => ['-H', header]),
        `${local.url}${pathAndQuery}`,
      ]);
      const cut = stdout.lastIndexOf('\n');
      return { status: Number(stdout.slice(cut + 1)), body: stdout.slice(0, cut) };
    };

    it('accepts a request curl signed', async () => {
      const { status, body } = await curl(
        DEMO_IDENTITY.secretAccessKey,
        '/token?min_ttl=300&scope=ba_demo_1',
      );
      expect(status).toBe(200);
      const event = JSON.parse(body) as LambdaFunctionURLEventWithIAMAuthorizer;
      expect(event.requestContext.authorizer.iam.userArn).toBe(DEMO_IDENTITY.arn);
      expect(event.queryStringParameters).toEqual({ min_ttl: '300', scope: 'ba_demo_1' });
    });

    it('accepts percent-encoded values when written sorted and upper-case', async () => {
      const { status, body } = await curl(
        DEMO_IDENTITY.secretAccessKey,
        '/token?a=x%3Ay&b=1%2B2&c=a%20b',
      );
      expect(status).toBe(200);
      const event = JSON.parse(body) as LambdaFunctionURLEvent;
      expect(event.queryStringParameters).toEqual({ a: 'x:y', b: '1+2', c: 'a b' });
    });

    it('accepts temporary credentials with -H x-amz-security-token', async () => {
      const { status, body } = await curl(SESSION.secretAccessKey, '/token', {
        accessKeyId: SESSION.accessKeyId,
        headers: [`x-amz-security-token: ${SESSION.sessionToken}`],
      });
      expect(status).toBe(200);
      const event = JSON.parse(body) as LambdaFunctionURLEventWithIAMAuthorizer;
      expect(event.requestContext.authorizer.iam.userArn).toBe(SESSION.arn);
    });

    it('gets 403 with a wrong secret', async () => {
      const { status, body } = await curl('w'.repeat(40), '/token?min_ttl=300&scope=ba_demo_1');
      expect(status).toBe(403);
      expect(body).toBe('{"Message":"Forbidden"}');
      expect(handler).not.toHaveBeenCalled();
    });
  });
});
