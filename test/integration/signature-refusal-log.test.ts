import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { Logger } from '@aws-lambda-powertools/logger';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEMO_IDENTITY, type LocalIdentity } from '../../local/local-identities.js';
import { type LocalStack, startLocalStack } from '../../local/stack.js';
import { captureOutput } from '../support/capture-output.js';
import { signRaw } from '../support/raw-sigv4.js';
import { signRequest } from '../support/sigv4.js';

const run = promisify(execFile);
const hasCurl = !spawnSync('curl', ['--version'], { stdio: 'ignore' }).error;

/** Temporary credentials, as a role session has them. */
const SESSION: LocalIdentity & { sessionToken: string } = {
  accessKeyId: 'ASIALOCALSESSION0001',
  secretAccessKey: 'sessionSecretAccessKey000000000000000000',
  sessionToken: 'IQoJb3JpZ2luX2VjEXAMPLE/session+token==',
  arn: 'arn:aws:sts::111122223333:assumed-role/reporting/session-7',
};
const WRONG_SECRET = 'wrongSecretAccessKey00000000000000000000';

let stack: LocalStack;
let host: string;
beforeAll(async () => {
  stack = await startLocalStack(
    {
      PORT: '0',
      DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'),
      TABLE_NAME: `refusal-log-${Date.now()}`,
      LOCAL_IDENTITIES: JSON.stringify([DEMO_IDENTITY, SESSION]),
    },
    // The stack's own logger, as `npm start` has it: JSON lines on stdout.
    { stackFile: null, logger: new Logger({ serviceName: 'token-vending-local' }) },
  );
  host = new URL(stack.info.functionUrl).host;
});
afterAll(async () => stack?.stop());

interface Sent {
  status: number;
  body: string;
  /** Every header the request carried, to look for in the log. */
  headers: Record<string, string>;
}

async function send(pathAndQuery: string, headers: Record<string, string>): Promise<Sent> {
  const { host: _host, ...rest } = headers; // fetch sets Host itself
  const response = await fetch(`${stack.info.functionUrl}${pathAndQuery}`, { headers: rest });
  return { status: response.status, body: await response.text(), headers };
}

/** Sends one request; the refusal lines the stack logged meanwhile, parsed, and the raw output. */
async function logged(
  request: () => Promise<Sent>,
): Promise<{ sent: Sent; lines: Array<Record<string, unknown>>; output: string }> {
  const captured = captureOutput();
  let sent: Sent;
  try {
    sent = await request();
  } finally {
    captured.restore();
  }
  const output = captured.text();
  const lines = output
    .split('\n')
    .filter((line) => line.includes('local URL refused a signature'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { sent, lines, output };
}

const hintOf = (lines: Array<Record<string, unknown>>): string =>
  String((lines[0]?.refused as { hint?: string } | undefined)?.hint);

function expectNoSecretIn(output: string, sent: Sent): void {
  for (const secret of [DEMO_IDENTITY.secretAccessKey, SESSION.secretAccessKey, WRONG_SECRET]) {
    expect(output).not.toContain(secret);
  }
  expect(output).not.toContain(SESSION.sessionToken);
  expect(output).not.toContain('IQoJb3JpZ2luX2VjWRONG');
  const authorization = sent.headers.authorization;
  if (authorization) {
    expect(output).not.toContain(authorization);
    const signature = /Signature=([0-9a-f]{64})/.exec(authorization)?.[1];
    expect(signature).toBeDefined();
    expect(output).not.toContain(signature);
  }
}

const sdkSigned = async (
  options: Partial<Parameters<typeof signRequest>[0]>,
  query: Record<string, string> = { scope: 'ba_demo_1' },
) => {
  const signed = await signRequest({
    identity: DEMO_IDENTITY,
    port: Number(new URL(stack.info.functionUrl).port),
    query,
    ...options,
  });
  return send(`/token?${new URLSearchParams(query)}`, signed.headers);
};

describe('the local URL logs why it refused a signature', () => {
  it.each([
    ['an unsigned request', () => send('/token?scope=ba_demo_1', {}), 'missing_authorization'],
    [
      'an unknown access key id',
      () => sdkSigned({ identity: { ...DEMO_IDENTITY, accessKeyId: 'AKIANOBODY0000000000' } }),
      'unknown_access_key_id',
    ],
    ['the wrong service', () => sdkSigned({ service: 'execute-api' }), 'wrong_service'],
    ['the wrong region', () => sdkSigned({ region: 'eu-west-1' }), 'wrong_region'],
    ['a wrong secret', () => sdkSigned({ secretAccessKey: WRONG_SECRET }), 'signature_mismatch'],
    [
      'a date skewed by 10 minutes',
      () => sdkSigned({ signingDate: new Date(Date.now() - 10 * 60_000) }),
      'clock_skew',
    ],
    [
      'a request whose Host is not signed',
      async () =>
        send('/token', signRaw({ ...DEMO_IDENTITY, host, signedHeaders: ['x-amz-date'] })),
      'host_not_signed',
    ],
    [
      'a wrong session token',
      () => sdkSigned({ identity: SESSION, sessionToken: 'IQoJb3JpZ2luX2VjWRONG' }),
      'wrong_session_token',
    ],
    [
      'temporary credentials without their session token',
      () => sdkSigned({ identity: SESSION }),
      'missing_session_token',
    ],
  ])(
    '%s: one line naming the check, the caller gets AWS’s bare 403',
    async (_label, request, check) => {
      const { sent, lines, output } = await logged(request);

      expect(sent.status).toBe(403);
      expect(sent.body).toBe('{"Message":"Forbidden"}');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({
        level: 'WARN',
        refused: { check, hint: expect.any(String), method: 'GET', path: '/token' },
        requestId: expect.any(String),
      });
      expectNoSecretIn(output, sent);
    },
  );

  it('says the query was signed as sent, unsorted, when that is what the signature matches', async () => {
    const query = 'scope=ba_demo_1&min_ttl=300';
    const { sent, lines, output } = await logged(() =>
      send(`/token?${query}`, signRaw({ ...DEMO_IDENTITY, host, rawQueryString: query })),
    );

    expect(sent.status).toBe(403);
    expect(lines[0]).toMatchObject({ refused: { check: 'signature_mismatch' } });
    expect(hintOf(lines)).toContain('signed the query exactly as sent');
    expectNoSecretIn(output, sent);
  });

  it.skipIf(!hasCurl)('explains curl --aws-sigv4 with an unsorted query', async () => {
    const { lines, output } = await logged(async () => {
      const { stdout } = await run('curl', [
        '-s',
        '--aws-sigv4',
        `aws:amz:${stack.info.region}:lambda`,
        '--user',
        `${DEMO_IDENTITY.accessKeyId}:${DEMO_IDENTITY.secretAccessKey}`,
        `${stack.info.functionUrl}/token?scope=ba_demo_1&min_ttl=300`,
      ]);
      return { status: 403, body: stdout, headers: {} };
    });

    expect(lines).toHaveLength(1);
    expect(hintOf(lines)).toContain('min_ttl, scope');
    expect(output).not.toContain(DEMO_IDENTITY.secretAccessKey);
  });

  it('logs nothing for a request it accepts', async () => {
    const { sent, lines } = await logged(() => sdkSigned({}));

    expect(sent.status).toBe(200);
    expect(lines).toEqual([]);
  });
});
