import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEMO_IDENTITY } from '../../local/function-url.js';
import { type LocalStack, startLocalStack } from '../../local/stack.js';
import { quietLogger } from '../support/vend-harness.js';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');

async function signedFetch(
  url: string,
  credentials: { accessKeyId: string; secretAccessKey: string },
  region = 'us-east-1',
): Promise<Response> {
  const target = new URL(url);
  const signer = new SignatureV4({ service: 'lambda', region, credentials, sha256: Sha256 });
  const signed = await signer.sign({
    method: 'GET',
    protocol: target.protocol,
    hostname: target.hostname,
    port: Number(target.port),
    path: target.pathname,
    query: Object.fromEntries(target.searchParams),
    headers: { host: target.host },
  });
  return fetch(url, { headers: signed.headers });
}

describe('the local stack in-process', () => {
  let stack: LocalStack;
  beforeAll(async () => {
    stack = await startLocalStack(
      {
        PORT: '0',
        DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'),
        TABLE_NAME: `stack-${Date.now()}`,
      },
      { stackFile: null, logger: quietLogger() },
    );
  });
  afterAll(async () => stack?.stop());

  it('serves a token to a request signed with @smithy/signature-v4', async () => {
    const response = await signedFetch(
      `${stack.info.functionUrl}/token?scope=ba_demo_1`,
      DEMO_IDENTITY,
    );

    expect(response.status).toBe(200);
    const body = (await response.json()) as Record<string, unknown>;
    expect(body.token_type).toBe('Bearer');
    expect(body.scope).toBe('ba_demo_1');
  });

  it('answers 403 Forbidden to unsigned and wrongly signed requests', async () => {
    const before = stack.simulator?.stats.tokenRequests;
    const unsigned = await fetch(`${stack.info.functionUrl}/token?scope=ba_demo_1`);
    const wrong = await signedFetch(`${stack.info.functionUrl}/token?scope=ba_demo_1`, {
      accessKeyId: DEMO_IDENTITY.accessKeyId,
      secretAccessKey: 'not-the-secret',
    });

    expect(unsigned.status).toBe(403);
    expect(await unsigned.json()).toEqual({ Message: 'Forbidden' });
    expect(wrong.status).toBe(403);
    expect(stack.simulator?.stats.tokenRequests).toBe(before);
  });

  it('serves the unscoped token to the demo identity', async () => {
    const response = await signedFetch(`${stack.info.functionUrl}/token`, DEMO_IDENTITY);

    expect(response.status).toBe(200);
    expect(((await response.json()) as Record<string, unknown>).scope).toBeUndefined();
  });
});

describe('npm start', () => {
  let child: ChildProcess;
  let output = '';
  const cwd = mkdtempSync(join(tmpdir(), 'tvf-start-'));

  beforeAll(async () => {
    child = spawn(
      process.execPath,
      [join(ROOT, 'node_modules/tsx/dist/cli.mjs'), join(ROOT, 'local/start.ts')],
      {
        cwd,
        env: { ...process.env, PORT: '0' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    child.stdout?.on('data', (d) => {
      output += d;
    });
    child.stderr?.on('data', (d) => {
      output += d;
    });
    await new Promise<void>((ready, fail) => {
      const timer = setTimeout(
        () => fail(new Error(`npm start did not come up:\n${output}`)),
        45_000,
      );
      const check = () => {
        if (output.includes('Serving until')) {
          clearTimeout(timer);
          ready();
        }
      };
      child.stdout?.on('data', check);
      child.once('exit', () => fail(new Error(`npm start exited:\n${output}`)));
    });
  }, 60_000);

  afterAll(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });

  it('prints a curl command that gets a token, and writes .local/stack.json', async () => {
    const command = output.split('\n').find((line) => line.trim().startsWith('curl '));
    expect(command).toBeDefined();

    const { stdout } = await run('sh', ['-c', command as string]);

    expect(JSON.parse(stdout)).toMatchObject({ token_type: 'Bearer', scope: 'ba_demo_1' });
    const info = JSON.parse(readFileSync(join(cwd, '.local/stack.json'), 'utf8'));
    expect(info.functionUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(info.identity.arn).toBe(DEMO_IDENTITY.arn);
  });

  it('stops everything on SIGTERM and removes the stack file', async () => {
    const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));

    child.kill('SIGTERM');

    expect(await exited).toBe(0);
    expect(existsSync(join(cwd, '.local/stack.json'))).toBe(false);
  }, 15_000);
});
