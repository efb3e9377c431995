/**
 * `tvm exec` as people run it: the built client/dist/tvm.js with plain node in
 * a child process, against a local stack running in this process (found through
 * `.local/stack.json` in the child's working directory). The command it runs is
 * a node script that reports the token only by its fingerprint.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { EXEC_VARIABLES, execEnvironment, leavesTerminalSignals } from '../../client/exec.js';
import { TokenVendingClient } from '../../client/index.js';
import { DEMO_IDENTITY } from '../../local/local-identities.js';
import { type LocalStack, startLocalStack } from '../../local/stack.js';
import { childOutput, type Run } from '../support/child-output.js';

const TVM = resolve(import.meta.dirname, '../../client/dist/tvm.js');
/** util-linux's `script`, which runs a command in a pseudo-terminal (Debian's bsdutils has it). */
const SCRIPT = ['/usr/bin/script', '/bin/script'].find((path) => existsSync(path));
const fingerprint = (token: string) =>
  createHash('sha256').update(token, 'utf8').digest('hex').slice(0, 16);

/** A command that prints what it got, the token only as its fingerprint. */
const REPORT = `
const { createHash } = require('node:crypto');
const token = process.env.TOKEN_VENDING_TOKEN ?? '';
console.log(JSON.stringify({
  fingerprint: createHash('sha256').update(token, 'utf8').digest('hex').slice(0, 16),
  authorization: process.env.TOKEN_VENDING_AUTHORIZATION === 'Bearer ' + token,
  expiresAt: Number(process.env.TOKEN_VENDING_EXPIRES_AT),
  scope: process.env.TOKEN_VENDING_SCOPE ?? null,
  args: process.argv.slice(1),
}));`;

let stack: LocalStack;
let root: string;
let project: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'tvm-exec-it-'));
  project = join(root, 'project');
  stack = await startLocalStack(
    {
      PORT: '0',
      DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'),
      TABLE_NAME: `client-exec-${process.pid}-${Date.now()}`,
    },
    {
      stackFile: join(project, '.local/stack.json'),
      logger: new Logger({ serviceName: 'client-exec-test', logLevel: 'SILENT' }),
    },
  );
});
afterAll(async () => {
  await stack?.stop();
  await rm(root, { recursive: true, force: true });
});

/** Starts `node tvm.js <args>` in the project directory with a clean environment. */
function start(
  args: string[],
  env: Record<string, string> = {},
): { child: ChildProcess; done: Promise<Run> } {
  const child = spawn(process.execPath, [TVM, ...args], {
    cwd: project,
    env: { PATH: process.env.PATH ?? '', HOME: root, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return { child, done: childOutput(child).done };
}

const tvm = (args: string[], env?: Record<string, string>) => start(args, env).done;

/** The token the stack serves now for `scope`. */
async function servedToken(scope?: string): Promise<string> {
  const client = new TokenVendingClient({
    url: stack.info.functionUrl,
    credentials: DEMO_IDENTITY,
  });
  return (await client.getToken(scope === undefined ? {} : { scope })).accessToken;
}

/** The token the stack serves now for `scope`, as its fingerprint. */
const served = async (scope?: string) => fingerprint(await servedToken(scope));

describe('tvm exec', () => {
  it('runs the command with the scoped token in its environment, and prints no token', async () => {
    const run = await tvm([
      'exec',
      '--scope',
      'ba_demo_1',
      '--',
      process.execPath,
      '-e',
      REPORT,
      'a b',
      '-x',
    ]);

    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
    const seen = JSON.parse(run.stdout);
    expect(seen).toMatchObject({ authorization: true, scope: 'ba_demo_1', args: ['a b', '-x'] });
    const token = await servedToken('ba_demo_1');
    expect(seen.fingerprint).toBe(fingerprint(token));
    expect(seen.expiresAt).toBeGreaterThan(Date.now() / 1000 + 300);
    // Compared as booleans, so that a failure never prints the token.
    expect(run.stdout.includes(token)).toBe(false);
  });

  it('gets the unscoped token without --scope, dropping an inherited TOKEN_VENDING_SCOPE', async () => {
    const run = await tvm(['exec', '--', process.execPath, '-e', REPORT], {
      TOKEN_VENDING_SCOPE: 'stale',
    });

    expect(run.code).toBe(0);
    const seen = JSON.parse(run.stdout);
    expect(seen.scope).toBeNull();
    expect(seen.fingerprint).toBe(await served());
  });

  it("exits with the command's exit code", async () => {
    const run = await tvm(['exec', '--', process.execPath, '-e', 'process.exit(7)']);

    expect(run.code).toBe(7);
  });

  it('passes SIGTERM on to the command, and exits as it does', async () => {
    const script =
      "process.on('SIGTERM', () => { console.log('got SIGTERM'); process.exit(42); });" +
      "console.log('ready'); setInterval(() => {}, 1000);";
    const { child, done } = start([
      'exec',
      '--scope',
      'ba_demo_2',
      '--',
      process.execPath,
      '-e',
      script,
    ]);
    await new Promise<void>((ready) => {
      child.stdout?.on('data', (d) => {
        if (String(d).includes('ready')) ready();
      });
    });

    child.kill('SIGTERM');
    const run = await done;

    expect(run.stdout).toBe('ready\ngot SIGTERM\n');
    expect(run.code).toBe(42);
  });

  /** A command that counts the SIGINTs it gets, and exits 0.5 s after the first. */
  const COUNTS_SIGINT =
    "let n = 0; process.on('SIGINT', () => { n += 1; console.log('INT ' + n);" +
    ' if (n === 1) setTimeout(() => process.exit(0), 500); });' +
    "console.log('ready'); setInterval(() => {}, 1000);";

  it('passes SIGINT on to the command when tvm runs without a terminal', async () => {
    const { child, done } = start(['exec', '--', process.execPath, '-e', COUNTS_SIGINT]);
    await new Promise<void>((ready) => {
      child.stdout?.on('data', (d) => {
        if (String(d).includes('ready')) ready();
      });
    });

    child.kill('SIGINT');
    const run = await done;

    expect(run.stdout).toBe('ready\nINT 1\n');
    expect(run.code).toBe(0);
  });

  it.skipIf(!SCRIPT)(
    'regression: one Ctrl-C in a terminal reaches the command once, not twice',
    async () => {
      // A pseudo-terminal (util-linux script) whose line discipline turns a
      // typed Ctrl-C into SIGINT for its foreground process group: tvm and the
      // command (the shell script starts execs tvm).
      const command = [process.execPath, TVM, 'exec', '--', process.execPath, '-e', COUNTS_SIGINT]
        .map((word) => `'${word.replaceAll("'", "'\\''")}'`)
        .join(' ');
      const child = spawn(SCRIPT as string, ['-qefc', `exec ${command}`, '/dev/null'], {
        cwd: project,
        env: { PATH: process.env.PATH ?? '', HOME: root, TERM: 'dumb' },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      const { done } = childOutput(child);
      await new Promise<void>((ready) => {
        child.stdout?.on('data', (d) => {
          if (String(d).includes('ready')) ready();
        });
      });

      child.stdin?.write('\x03');
      const run = await done;

      expect(run.stdout).toContain('INT 1');
      expect(run.stdout).not.toContain('INT 2');
      expect(run.code).toBe(0);
    },
    20_000,
  );

  it("regression: as a container's PID 1 (docker run -t) tvm passes SIGINT on though it has a terminal: signals come to it alone there", () => {
    const tty = () => true;
    const none = () => false;

    expect(leavesTerminalSignals(1, tty)).toBe(false);
    expect(leavesTerminalSignals(4242, tty)).toBe(true);
    expect(leavesTerminalSignals(4242, (fd) => fd === 2)).toBe(true);
    expect(leavesTerminalSignals(4242, none)).toBe(false);
  });

  it('exits 128 + the signal number when a signal ends the command', async () => {
    const run = await tvm([
      'exec',
      '--',
      process.execPath,
      '-e',
      "process.kill(process.pid, 'SIGKILL')",
    ]);

    expect(run.code).toBe(137);
  });

  it('exits 127 when the command is not found', async () => {
    const run = await tvm(['exec', '--', 'no-such-command-for-tvm-exec']);

    expect(run).toMatchObject({
      code: 127,
      stderr: 'tvm: not_found: no-such-command-for-tvm-exec: command not found\n',
    });
  });

  it('exits 1 without running the command when there is no token', async () => {
    const marker = join(root, 'ran');
    const run = await tvm([
      'exec',
      '--scope',
      'ba_not_configured',
      '--',
      process.execPath,
      '-e',
      `require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'x')`,
    ]);

    expect(run).toMatchObject({ code: 1, stderr: 'tvm: access_denied: Access denied\n' });
    expect(existsSync(marker)).toBe(false);
  });

  it('exits 2 without -- <command>', async () => {
    const none = await tvm(['exec', '--scope', 'ba_demo_1']);
    const noCommand = await tvm(['exec', '--']);
    const notAfter = await tvm(['exec', 'env']);

    expect([none.code, noCommand.code, notAfter.code]).toEqual([2, 2, 2]);
    expect(notAfter.stderr).toContain('put the command after --');
  });
});

describe('the environment tvm exec builds', () => {
  it('keeps the rest of the environment and sets all four variables for a scoped token', () => {
    const env = execEnvironment(
      { PATH: '/bin', TOKEN_VENDING_TOKEN: 'old', UNSET: undefined },
      { accessToken: 'tok_1', tokenType: 'Bearer', expiresAt: 1_893_456_000, scope: 'ba_1' },
    );

    expect(env).toEqual({
      PATH: '/bin',
      [EXEC_VARIABLES.token]: 'tok_1',
      [EXEC_VARIABLES.authorization]: 'Bearer tok_1',
      [EXEC_VARIABLES.expiresAt]: '1893456000',
      [EXEC_VARIABLES.scope]: 'ba_1',
    });
  });
});
