/**
 * What a newcomer does with the client tools, black-box: `npm start` in a
 * child process (test/support/npm-start.ts), then, from its directory and with
 * no AWS_* variables, `GET /grants` signed by hand and `tvm grants`, the
 * library with no options, `tvm exec`, and `tvm agent` called with curl-like
 * unsigned requests. Tokens are compared by fingerprint and never printed;
 * neither the agent's log nor the stack's holds one.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEMO_IDENTITY } from '../../local/local-identities.js';
import { childOutput, type Run } from '../support/child-output.js';
import { type NpmStart, startNpmStart } from '../support/npm-start.js';
import { signedGet } from '../support/sigv4.js';

const ROOT = resolve(import.meta.dirname, '../..');
const TVM = join(ROOT, 'client/dist/tvm.js');
const LIBRARY = join(ROOT, 'client/dist/index.js');
const DEMO_ARN = 'arn:aws:sts::000000000000:assumed-role/local-demo/local-demo-session';
const fingerprint = (token: string) =>
  createHash('sha256').update(token, 'utf8').digest('hex').slice(0, 16);

let dir: string;
let stack: NpmStart;
/** Every token a test saw, to look for in the logs at the end. */
const tokensSeen = new Set<string>();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tvm-black-box-'));
  stack = await startNpmStart(dir, {
    DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'),
    TABLE_NAME: `black-box-${process.pid}-${Date.now()}`,
  });
}, 60_000);

afterAll(async () => {
  if (stack?.child.exitCode === null) {
    const exited = new Promise((done) => stack.child.once('exit', done));
    stack.child.kill('SIGTERM');
    await exited;
  }
  await rm(dir, { recursive: true, force: true });
});

/** This process's environment without AWS_*, npm_* and NODE_OPTIONS: a newcomer's shell. */
function shellEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^(aws_|npm_|node_options$|vitest)/i.test(name)) env[name] = value;
  }
  return { ...env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', ...extra };
}

/** What the agent answers: a token, a problem or the health check. */
interface AgentBody {
  readonly access_token: string;
  readonly expires_in: number;
  readonly code?: string;
  readonly [field: string]: unknown;
}

/** Starts `command args` in the stack's directory. */
function start(
  command: string,
  args: string[],
): { child: ChildProcess; output: () => Run; done: Promise<Run> } {
  const child = spawn(command, args, {
    cwd: dir,
    env: shellEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return { child, ...childOutput(child) };
}

const node = (args: string[]) => start(process.execPath, args).done;

describe('what the caller is granted', () => {
  it('GET /grants, signed by hand as the demo identity, answers its principal and grants', async () => {
    const response = await signedGet(`${stack.url}/grants`, DEMO_IDENTITY);

    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      principal: DEMO_ARN,
      scopes: ['ba_demo_1', 'ba_demo_2'],
      unscoped: true,
    });
  });

  it('tvm grants prints the same, finding the stack through .local/stack.json', async () => {
    const json = await node([TVM, 'grants', '--json']);
    const text = await node([TVM, 'grants']);

    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      principal: DEMO_ARN,
      scopes: ['ba_demo_1', 'ba_demo_2'],
      unscoped: true,
    });
    expect(text.stdout).toContain(
      `principal   ${DEMO_ARN}\nunscoped    granted\nscopes (2)  ba_demo_1\n`,
    );
  });
});

describe('the library with no options', () => {
  it("gets a token and its grants from the local stack, signing as the stack's identity", async () => {
    const script = `
      import { createHash } from 'node:crypto';
      import { TokenVendingClient } from ${JSON.stringify(LIBRARY)};
      const client = new TokenVendingClient();
      const token = await client.getToken({ scope: 'ba_demo_1' });
      const grants = await client.getGrants();
      let off;
      try { new TokenVendingClient({ localStack: false }); } catch (error) { off = error.code; }
      console.log(JSON.stringify({
        fingerprint: createHash('sha256').update(token.accessToken).digest('hex').slice(0, 16),
        scope: token.scope, principal: grants.principal, off,
      }));`;

    const run = await node(['--input-type=module', '-e', script]);

    expect(run.stderr).toBe('');
    const seen = JSON.parse(run.stdout);
    expect(seen).toMatchObject({ scope: 'ba_demo_1', principal: DEMO_ARN, off: 'invalid_config' });
    expect(seen.fingerprint).toBe(fingerprint(await agentlessToken('ba_demo_1')));
  });
});

/** The token the stack serves for `scope`, through tvm token (the same cache every tool reads). */
async function agentlessToken(scope: string): Promise<string> {
  const run = await node([TVM, 'token', '--scope', scope]);
  const token = JSON.parse(run.stdout).access_token as string;
  tokensSeen.add(token);
  return token;
}

describe('tvm exec', () => {
  it("runs a command with the token in its environment, and exits with the command's code", async () => {
    const report =
      "const t = process.env.TOKEN_VENDING_TOKEN; console.log(require('node:crypto').createHash('sha256').update(t).digest('hex').slice(0, 16));" +
      "process.exit(process.env.TOKEN_VENDING_AUTHORIZATION === 'Bearer ' + t ? 3 : 4);";

    const run = await node([
      TVM,
      'exec',
      '--scope',
      'ba_demo_2',
      '--',
      process.execPath,
      '-e',
      report,
    ]);

    expect(run.code).toBe(3);
    expect(run.stdout.trim()).toBe(fingerprint(await agentlessToken('ba_demo_2')));
    expect(run.stderr).toBe('');
  });
});

describe('tvm agent', () => {
  it('serves unsigned callers that show the agent token, refuses the rest, and logs no token', async () => {
    const tokenFile = join(dir, 'agent', 'token');
    const agent = start(process.execPath, [TVM, 'agent', '--port', '0', '--token-file', tokenFile]);
    let url: string | undefined;
    for (let waited = 0; !url && waited < 15_000; waited += 50) {
      url = /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(agent.output().stderr)?.[1];
      if (!url) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(url, agent.output().stderr).toBeDefined();
    const agentToken = (await readFile(tokenFile, 'utf8')).trim();
    const get = async (
      path: string,
      headers: Record<string, string> = { 'X-Token-Vending-Agent-Token': agentToken },
    ) => {
      const response = await fetch(`${url}${path}`, { headers });
      return {
        status: response.status,
        type: response.headers.get('content-type'),
        body: (await response.json()) as AgentBody,
      };
    };

    const health = await get('/healthz', {});
    const bare = await get('/token?scope=ba_demo_1', {});
    const wrong = await get('/token?scope=ba_demo_1', {
      'X-Token-Vending-Agent-Token': 'guessed-guessed-guessed',
    });
    const scoped = await get('/token?scope=ba_demo_1&min_ttl=600');
    const unscoped = await get('/token');
    const denied = await get('/token?scope=ba_not_configured');
    for (const body of [scoped.body, unscoped.body]) tokensSeen.add(body.access_token);
    agent.child.kill('SIGTERM');
    const stopped = await agent.done;

    expect(health).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect([bare.status, bare.type, bare.body.code]).toEqual([
      401,
      'application/problem+json',
      'unauthenticated',
    ]);
    expect([wrong.status, wrong.body.code]).toEqual([403, 'access_denied']);
    expect(scoped.status).toBe(200);
    expect(Object.keys(scoped.body).sort()).toEqual([
      'access_token',
      'expires_at',
      'expires_in',
      'scope',
      'token_type',
    ]);
    expect(scoped.body).toMatchObject({ token_type: 'Bearer', scope: 'ba_demo_1' });
    expect(scoped.body.expires_in).toBeGreaterThan(600);
    expect(fingerprint(scoped.body.access_token)).toBe(
      fingerprint(await agentlessToken('ba_demo_1')),
    );
    expect(unscoped.status).toBe(200);
    expect(unscoped.body).not.toHaveProperty('scope');
    expect([denied.status, denied.body.code]).toEqual([403, 'access_denied']);
    expect(stopped.code).toBe(0);
    expect(existsSync(tokenFile)).toBe(false);
    // The agent's log: one line per request with the token's fingerprint, never a token.
    const lines = stopped.stderr
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines.filter((line) => line.message === 'request')).toHaveLength(6);
    expect(lines).toContainEqual(
      expect.objectContaining({
        path: '/token',
        scope: 'ba_demo_1',
        status: 200,
        fingerprint: fingerprint(scoped.body.access_token),
      }),
    );
    expect([...tokensSeen].filter((token) => stopped.stderr.includes(token))).toEqual([]);
    expect(stopped.stderr.includes(agentToken)).toBe(false);
    expect(stopped.stdout).toBe('');
  }, 30_000);
});

describe('the logs', () => {
  it("hold none of the tokens the tools got: not npm start's", () => {
    expect(tokensSeen.size).toBeGreaterThanOrEqual(3);
    expect([...tokensSeen].filter((token) => stack.output().includes(token))).toEqual([]);
  });
});
