/**
 * `tvm` as people run it: the client package's built bin, client/dist/tvm.js
 * (built for this test run), with plain node in a child process, against the
 * local stack running in this process, found through `.local/stack.json` in the
 * child's working directory or through TVM_URL and AWS_* variables. Then the
 * repository's own `bin/tvm.mjs`, which runs that build.
 */
import { execFile, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEMO_IDENTITY, type LocalIdentity } from '../../local/local-identities.js';
import { type LocalStack, startLocalStack } from '../../local/stack.js';

const ROOT = resolve(import.meta.dirname, '../..');
const TVM = join(ROOT, 'client/dist/tvm.js');
const SHIM = join(ROOT, 'bin/tvm.mjs');

const DEMO_ROLE_ARN = 'arn:aws:iam::000000000000:role/local-demo';

const OUTSIDER: LocalIdentity = {
  accessKeyId: 'AKIALOCALOUTSIDER001',
  secretAccessKey: 'localOutsiderSecretAccessKey000000000000',
  arn: 'arn:aws:iam::000000000000:role/outsider',
};

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Temporary credentials: the Function URL wants their session token with every request. */
const SESSION: LocalIdentity = {
  accessKeyId: 'ASIALOCALSESSION0001',
  secretAccessKey: 'sessionSecretAccessKey000000000000000000',
  sessionToken: 'IQoJb3JpZ2luX2VjEXAMPLE/session+token==',
  arn: 'arn:aws:sts::000000000000:assumed-role/local-demo/cli-session',
};

let stack: LocalStack;
let sessionStack: LocalStack;
let home: string;
let stackDir: string;
let sessionStackDir: string;
let emptyDir: string;
const runs: Run[] = [];

/** Runs `node client/dist/tvm.js <args>` (or `bin`) with only the environment given (no AWS_* of ours). */
function tvm(
  args: string[],
  options: { cwd: string; env?: Record<string, string>; bin?: string },
): Promise<Run> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [options.bin ?? TVM, ...args],
      {
        cwd: options.cwd,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: home,
          AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
          ...options.env,
        },
        timeout: 15_000,
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        const run = { code, stdout, stderr };
        runs.push(run);
        done(run);
      },
    );
  });
}

beforeAll(async () => {
  const root = await mkdtemp(join(tmpdir(), 'tvm-cli-it-'));
  home = join(root, 'home');
  stackDir = join(root, 'project');
  emptyDir = root;
  stack = await startLocalStack(
    {
      PORT: '0',
      DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'),
      TABLE_NAME: `client-cli-${process.pid}-${Date.now()}`,
      LOCAL_IDENTITIES: JSON.stringify([DEMO_IDENTITY, OUTSIDER]),
      ACCESS_POLICY: JSON.stringify({
        scopes: ['ba_demo_1', 'ba_demo_2'],
        // The demo identity is a session of role local-demo.
        grants: [{ principal: DEMO_ROLE_ARN, scopes: ['*'], unscoped: true }],
      }),
    },
    {
      stackFile: join(stackDir, '.local/stack.json'),
      logger: new Logger({ serviceName: 'client-cli-test', logLevel: 'SILENT' }),
    },
  );
  sessionStackDir = join(root, 'session-project');
  sessionStack = await startLocalStack(
    {
      PORT: '0',
      DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'),
      TABLE_NAME: `client-cli-session-${process.pid}-${Date.now()}`,
      LOCAL_IDENTITIES: JSON.stringify([SESSION]),
    },
    {
      stackFile: join(sessionStackDir, '.local/stack.json'),
      logger: new Logger({ serviceName: 'client-cli-test', logLevel: 'SILENT' }),
    },
  );
  return async () => {
    await sessionStack?.stop();
    await stack?.stop();
    await rm(root, { recursive: true, force: true });
  };
});

afterAll(() => {
  // No run may have put a token on stderr; the simulator's tokens start with sim_.
  expect(runs.length).toBeGreaterThan(0);
  for (const run of runs) expect(run.stderr).not.toMatch(/sim_/);
});

describe('tvm token', () => {
  it('prints a token as JSON, finding the local stack through .local/stack.json', async () => {
    const run = await tvm(['token', '--scope', 'ba_demo_1'], { cwd: stackDir });

    expect(run).toMatchObject({ code: 0, stderr: '' });
    const body = JSON.parse(run.stdout);
    expect(body).toMatchObject({ token_type: 'Bearer', scope: 'ba_demo_1' });
    expect(body.access_token).toMatch(/^sim_/);
    expect(body.expires_in).toBeGreaterThan(7000);
    expect(body.expires_at).toBeGreaterThan(Date.now() / 1000 + 7000);
  });

  it('prints only the Authorization line with --header', async () => {
    const run = await tvm(['token', '--header'], { cwd: stackDir });

    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(/^Authorization: Bearer sim_\S+\n$/);
  });

  it('works with TVM_URL and AWS_* variables in place of a stack file', async () => {
    const run = await tvm(['token'], {
      cwd: emptyDir,
      env: {
        TVM_URL: stack.info.functionUrl,
        AWS_ACCESS_KEY_ID: DEMO_IDENTITY.accessKeyId,
        AWS_SECRET_ACCESS_KEY: DEMO_IDENTITY.secretAccessKey,
      },
    });

    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).scope).toBeUndefined();
  });

  it('exits 1 with "tvm: access_denied: ..." when the caller is not granted the scope', async () => {
    const run = await tvm(['token', '--scope', 'ba_demo_1'], {
      cwd: stackDir,
      env: {
        AWS_ACCESS_KEY_ID: OUTSIDER.accessKeyId,
        AWS_SECRET_ACCESS_KEY: OUTSIDER.secretAccessKey,
      },
    });

    expect(run).toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'tvm: access_denied: Access denied\n',
    });
  });

  it('exits 1 when the Function URL refuses the signature', async () => {
    const run = await tvm(['token'], {
      cwd: stackDir,
      env: { AWS_ACCESS_KEY_ID: DEMO_IDENTITY.accessKeyId, AWS_SECRET_ACCESS_KEY: 'wrong' },
    });

    expect(run).toMatchObject({
      code: 1,
      stderr: 'tvm: access_denied: Forbidden by the Function URL (IAM)\n',
    });
  });

  it("signs with the stack file identity's session token", async () => {
    const run = await tvm(['token', '--scope', 'ba_demo_1'], { cwd: sessionStackDir });

    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toMatchObject({ token_type: 'Bearer', scope: 'ba_demo_1' });
  });

  it('exits 1 when temporary credentials come without their session token', async () => {
    const run = await tvm(['token'], {
      cwd: sessionStackDir,
      env: {
        AWS_ACCESS_KEY_ID: SESSION.accessKeyId,
        AWS_SECRET_ACCESS_KEY: SESSION.secretAccessKey,
      },
    });

    expect(run).toMatchObject({
      code: 1,
      stderr: 'tvm: access_denied: Forbidden by the Function URL (IAM)\n',
    });
  });

  it('exits 2 on an http: URL to a host that is not loopback, sending nothing', async () => {
    const run = await tvm(['token', '--url', 'http://vend.example.com', '--region', 'us-east-1'], {
      cwd: emptyDir,
      env: { AWS_ACCESS_KEY_ID: 'AKIAENVIRONMENT00001', AWS_SECRET_ACCESS_KEY: 'secret' },
    });

    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /^tvm: invalid_config: url must be https: unless its host is loopback/,
    );
  });

  it('exits 2 on a usage error', async () => {
    const run = await tvm(['token', '--min-ttl', 'soon'], { cwd: stackDir });

    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      "tvm: usage: --min-ttl must be a whole number of seconds, 0..3600\nRun 'tvm token --help' for usage.\n",
    );
  });

  it('exits 2 when it has no URL', async () => {
    const run = await tvm(['token'], { cwd: emptyDir });

    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^tvm: usage: no vend URL/);
  });
});

describe('tvm admin', () => {
  it('answers not_available outside the project directory (no admin script), exit 1', async () => {
    const run = await tvm(['admin', '{"action":"status"}'], { cwd: stackDir });

    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^tvm: not_available: no "admin" script in \.\/package\.json/);
  });
});

describe('tvm policy validate', () => {
  const CHECKOUT = 'arn:aws:iam::111122223333:role/checkout';

  it("checks a document in the project directory with the functions' own check: valid exits 0", async () => {
    const file = join(emptyDir, 'good-policy.json');
    await writeFile(
      file,
      JSON.stringify({
        scopes: ['ba_1', 'ba_2'],
        grants: [{ principal: CHECKOUT, scopes: ['ba_1'] }],
        keyIssuing: { businessApplicationIds: ['ba_1'] },
      }),
    );

    const run = await tvm(['policy', 'validate', file], { cwd: ROOT });

    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(
      /is valid: 2 scopes, 1 principals, 1 key-issuing ids \(sha256:[0-9a-f]{12}, \d+ bytes\)\n$/,
    );
  });

  it('lists every problem of an invalid document, one per line, and exits 1', async () => {
    const file = join(emptyDir, 'bad-policy.json');
    await writeFile(
      file,
      JSON.stringify({
        scopes: ['ba_1', 'unscoped'],
        grants: [{ principal: 'checkout', scopes: ['ba_9'] }],
      }),
    );

    const run = await tvm(['policy', 'validate', file], { cwd: ROOT });

    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr.split('\n').filter((line) => line.startsWith('  - '))).toEqual([
      expect.stringMatching(/^ {2}- grants\.0\.principal: must be an IAM role ARN/),
      '  - grants.0.scopes: "ba_9" is not listed in scopes',
      expect.stringMatching(/^ {2}- scopes: "unscoped" is reserved/),
    ]);
  });

  it('regression: refuses a document larger than AppConfig hosts, however valid its content', async () => {
    // Was "valid": AppConfig would then refuse to store it.
    const file = join(emptyDir, 'large-policy.json');
    const scopes = Array.from({ length: 100_000 }, (_, i) => `ba_${String(i).padStart(6, '0')}`);
    await writeFile(file, JSON.stringify({ scopes, grants: [] }));

    const run = await tvm(['policy', 'validate', file], { cwd: ROOT });

    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^ {2}- \(document\): \d+ bytes, over the 1048576 bytes AppConfig's hosted configuration store takes$/m,
    );
  });

  it('answers not_available outside the project directory, exit 1', async () => {
    const run = await tvm(['policy', 'validate', 'policy.json'], { cwd: emptyDir });

    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^tvm: not_available: no "policy" script in \.\/package\.json/);
  });
});

describe('help', () => {
  it.each([[['--help']], [['token', '--help']], [['admin', '--help']], [['policy', '--help']]])(
    'tvm %j exits 0 with usage on stdout',
    async (args) => {
      const run = await tvm(args, { cwd: emptyDir });

      expect(run).toMatchObject({ code: 0, stderr: '' });
      expect(run.stdout).toMatch(/^Usage: tvm /);
      expect(run.stdout).toContain('Exit codes: 0 ok, 1 error');
    },
  );
});

describe('output that cannot be written', () => {
  it.each([
    ['the package tvm', TVM],
    ['bin/tvm.mjs', SHIM],
  ])(
    'regression: %s on a full stdout exits 1 with one line, no stack trace',
    async (_name, bin) => {
      // Was an unhandled ENOSPC (or EPIPE with `| head`) and Node's stack trace.
      const full = openSync('/dev/full', 'w');
      try {
        const child = spawn(process.execPath, [bin, '--help'], {
          cwd: emptyDir,
          stdio: ['ignore', full, 'pipe'],
        });
        let stderr = '';
        child.stderr?.on('data', (chunk: Buffer) => {
          stderr += chunk.toString();
        });
        const code = await new Promise<number | null>((done) => child.once('exit', done));

        expect(code).toBe(1);
        expect(stderr).toBe('tvm: output_failed: cannot write to stdout (ENOSPC)\n');
      } finally {
        closeSync(full);
      }
    },
  );
});

describe("bin/tvm.mjs, the repository's tvm (npx tvm here)", () => {
  it('runs the built client: a token from the local stack', async () => {
    const run = await tvm(['token', '--scope', 'ba_demo_1'], { cwd: stackDir, bin: SHIM });

    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toMatchObject({ token_type: 'Bearer', scope: 'ba_demo_1' });
  });

  /** A copy of the shim in a repository layout of its own: `bin/tvm.mjs` and `client/`. */
  async function fakeRepository(name: string): Promise<{ shim: string; client: string }> {
    const repo = join(emptyDir, name);
    await mkdir(join(repo, 'bin'), { recursive: true });
    await mkdir(join(repo, 'client'));
    const shim = join(repo, 'bin/tvm.mjs');
    await writeFile(shim, await readFile(SHIM));
    return { shim, client: join(repo, 'client') };
  }

  it('says how to build when client/dist is missing, exit 1', async () => {
    const { shim } = await fakeRepository('unbuilt');

    const run = await tvm(['--help'], { cwd: emptyDir, bin: shim });

    expect(run).toMatchObject({ code: 1, stdout: '' });
    expect(run.stderr).toBe(
      'tvm: not_built: client/dist is missing (install scripts did not run?): run npm run build -w client\n',
    );
  });

  it('warns when a client source changed after the build, and runs the build (one from before run(): main only)', async () => {
    const { shim, client } = await fakeRepository('stale');
    await mkdir(join(client, 'dist'));
    await writeFile(
      join(client, 'dist/cli.js'),
      "export const main = async (argv) => { console.log('built', ...argv); return 0; };\n",
    );
    await writeFile(join(client, 'cli.ts'), '');
    const past = new Date(Date.now() - 60_000);
    await utimes(join(client, 'dist/cli.js'), past, past);

    const run = await tvm(['token'], { cwd: emptyDir, bin: shim });

    expect(run).toEqual({
      code: 0,
      stdout: 'built token\n',
      stderr:
        'tvm: warning: client/*.ts changed after client/dist was built: run npm run build -w client\n',
    });
  });
});
