/**
 * `npm run admin`'s command line in-process (arguments, environment, working
 * directory and streams are parameters): usage, bad events, and each way the
 * local stack can be missing or misconfigured, all answered with one clear
 * line and never a stack trace. Running events against a real stack is
 * test/integration/local-admin.test.ts.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EVENTS } from '../../functions/admin/admin-event.js';
import { ConfigError } from '../../functions/core/errors.js';
import { ADMIN_USAGE, runAdminCli } from '../../local/admin-cli.js';
import { resolveLocalAdmin } from '../../local/admin-wiring.js';
import { DEMO_IDENTITY } from '../../local/local-identities.js';
import type { StackInfo } from '../../local/stack.js';

let root: string;
let dirs = 0;

/** A stack file as npm start writes it, pointing at nothing that runs. */
const stackInfo = (dir: string, patch: Partial<StackInfo> = {}): StackInfo => ({
  functionUrl: 'http://127.0.0.1:9',
  region: 'us-east-1',
  providerUrl: 'http://127.0.0.1:9',
  providerSimulated: true,
  // Port 1: nothing listens, so a DynamoDB call fails at once.
  dynamodbEndpoint: 'http://127.0.0.1:1',
  tableName: 'token-vending-local',
  unscopedScopeMode: 'omit',
  scopes: ['ba_demo_1', 'ba_demo_2'],
  identity: DEMO_IDENTITY,
  sealingKeyFile: join(dir, '.local/sealing-key'),
  localSecretsDir: join(dir, '.local/secrets'),
  keyIssuing: { businessApplicationIds: [] },
  refreshAheadSeconds: 900,
  refreshIntervalSeconds: 300,
  inUseWindowSeconds: 3600,
  ...patch,
});

/** A project directory, with a stack file (text or info) and a sealing key when given. */
async function project(
  files: { stack?: string | ((dir: string) => unknown); key?: string } = {},
): Promise<string> {
  const dir = join(root, `p${dirs++}`);
  await mkdir(join(dir, '.local'), { recursive: true });
  if (files.stack !== undefined) {
    const text =
      typeof files.stack === 'string' ? files.stack : JSON.stringify(files.stack(dir), null, 2);
    await writeFile(join(dir, '.local/stack.json'), text);
  }
  if (files.key !== undefined) await writeFile(join(dir, '.local/sealing-key'), files.key);
  return dir;
}

const KEY = `${Buffer.alloc(32, 7).toString('base64')}\n`;

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** URLs the run fetched (the check that the stack is up). */
  readonly fetched: string[];
}

async function admin(
  argv: string[],
  options: { cwd?: string; env?: Record<string, string>; up?: boolean } = {},
): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const fetched: string[] = [];
  const code = await runAdminCli(argv, {
    env: options.env ?? {},
    cwd: options.cwd ?? root,
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    fetch: async (input) => {
      fetched.push(String(input));
      if (!options.up) throw new TypeError('fetch failed');
      return new Response('{"Message":"Forbidden"}', { status: 403 });
    },
  });
  // Whatever happened: one clear line per problem, never a stack trace.
  expect(stderr).not.toMatch(/\n\s+at |Error:/);
  return { code, stdout, stderr, fetched };
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'local-admin-cli-'));
});
afterAll(() => rm(root, { recursive: true, force: true }));

describe('usage', () => {
  it('prints the usage with every valid event on --help, exit 0', async () => {
    const run = await admin(['--help']);

    expect(run).toMatchObject({ code: 0, stdout: ADMIN_USAGE, stderr: '' });
    for (const event of ADMIN_EVENTS) expect(run.stdout).toContain(event);
  });

  it.each([
    [[], 'missing the event JSON'],
    [['{"action":'], 'the event is not valid JSON'],
    [['status'], 'the event is not valid JSON'],
    [['{"action":"status"}', 'extra'], 'expected one argument, the event JSON (quote it)'],
  ])('exits 2 on %j with a usage line and the valid events', async (argv, problem) => {
    const run = await admin(argv);

    expect(run).toMatchObject({ code: 2, stdout: '' });
    expect(run.stderr).toBe(`admin: usage: ${problem}\n${ADMIN_USAGE}`);
  });
});

describe('bad events, answered before the stack is looked for', () => {
  it.each([
    ['{"action":"restart"}', /^admin: invalid_request: Unknown "action"\. Valid events: /],
    ['[]', /^admin: invalid_request: The event must be a JSON object/],
    [
      '{"action":"invalidate","scope":"no spaces"}',
      /^admin: invalid_request: "invalidate": "scope" must be a scope matching /,
    ],
    ['{"action":"refresh"}', /^admin: invalid_request: "refresh" needs "scope": a scope matching /],
    [
      '{"action":"issue-keys","businessApplicationIds":"ba_1"}',
      /^admin: invalid_request: bad key-issuing event \(businessApplicationIds: expected Array/,
    ],
  ])('%s exits 1 with invalid_request', async (event, message) => {
    const run = await admin([event]);

    expect(run).toMatchObject({ code: 1, stdout: '', fetched: [] });
    expect(run.stderr).toMatch(message);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
  });
});

describe('the local stack', () => {
  it('is required: without .local/stack.json it says to run npm start', async () => {
    const run = await admin(['{"action":"status"}'], { cwd: await project() });

    expect(run).toMatchObject({ code: 1, stdout: '' });
    expect(run.stderr).toBe(
      'admin: no_local_stack: no .local/stack.json here: start the local stack with npm start ' +
        'in this directory (npm run admin reads its DynamoDB endpoint, URLs and sealing key from that file)\n',
    );
  });

  it('refuses a stack file that is not JSON', async () => {
    const run = await admin(['{"action":"status"}'], {
      cwd: await project({ stack: '{"functionUrl"' }),
    });

    expect(run).toMatchObject({
      code: 1,
      stderr: 'admin: invalid_stack_file: .local/stack.json is not JSON\n',
    });
  });

  it('refuses a stack file from an npm start without a sealing key, naming what is missing', async () => {
    const cwd = await project({
      stack: (dir) => {
        const { sealingKeyFile: _, ...old } = stackInfo(dir);
        return old;
      },
    });

    const run = await admin(['{"action":"status"}'], { cwd });

    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^admin: invalid_stack_file: .*\(sealingKeyFile\): restart the local stack/,
    );
  });

  it('needs the sealing key the stack file names', async () => {
    const run = await admin(['{"action":"status"}'], { cwd: await project({ stack: stackInfo }) });

    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^admin: no_sealing_key: the local stack's sealing key .* is missing/,
    );
  });

  it('refuses a key file that holds no 32-byte key, without quoting it', async () => {
    const cwd = await project({ stack: stackInfo, key: 'c2hvcnQ=\n' });

    const run = await admin(['{"action":"status"}'], { cwd });

    expect(run.stderr).toMatch(/^admin: no_sealing_key: .* does not hold a 32-byte key/);
    expect(run.stderr).not.toContain('c2hvcnQ');
  });

  it('answers stack_not_running when nothing answers at the URL of a stale stack file', async () => {
    const cwd = await project({ stack: stackInfo, key: KEY });

    const run = await admin(['{"action":"status"}'], { cwd });

    expect(run).toMatchObject({ code: 1, stdout: '', fetched: ['http://127.0.0.1:9/healthz'] });
    expect(run.stderr).toMatch(
      /^admin: stack_not_running: no local stack answers at http:\/\/127\.0\.0\.1:9: start it with npm start/,
    );
  });

  it('finds the vend URL through PORT when it is set, before the stack file', async () => {
    const cwd = await project({ stack: stackInfo, key: KEY });

    const run = await admin(['{"action":"invalidate","scope":"ba_demo_1"}'], {
      cwd,
      env: { PORT: '18787' },
      up: true,
    });

    expect(run.fetched).toEqual(['http://127.0.0.1:18787/healthz']);
    // The stack file's DynamoDB endpoint (nothing listens there in this test).
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^admin: store_unavailable: DynamoDB DeleteItem failed .*is the local stack's DynamoDB running/m,
    );
  });

  it('regression: a key-job store that does not answer gets the same DynamoDB hint as the token store', async () => {
    const cwd = await project({ stack: stackInfo, key: KEY });

    const run = await admin(
      ['{"action":"clear-pending-key","businessApplicationId":"ba_1","reason":"confirmed"}'],
      { cwd, env: { PORT: '18787' }, up: true },
    );

    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^admin: job_store_unavailable: .*: is the local stack's DynamoDB running \(npm start\)\?$/m,
    );
  });

  it('reports every configuration problem at once, never echoing a secret', async () => {
    const cwd = await project({
      stack: (dir) =>
        stackInfo(dir, { providerSimulated: false, providerUrl: 'https://provider.example' }),
      key: KEY,
    });

    const run = await admin(['{"action":"status"}'], {
      cwd,
      env: { IN_USE_WINDOW_SECONDS: '5', PROVIDER_SECRET: 'provider-secret-value' },
    });

    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^admin: invalid_config: Invalid configuration: /);
    // A secret without its key: the pair is set together or not at all.
    expect(run.stderr).toContain('PROVIDER_KEY and PROVIDER_SECRET go together');
    expect(run.stderr).toContain('IN_USE_WINDOW_SECONDS must be an integer from 300 to 86400');
    expect(run.stderr).not.toContain('provider-secret-value');
  });
});

describe('the policy the admin judges by while the policy file holds an invalid edit', () => {
  const IN_FORCE = JSON.stringify({
    scopes: ['ba_demo_1'],
    grants: [{ principal: 'arn:aws:iam::000000000000:role/local-demo', scopes: ['*'] }],
  });
  /** A running stack's control endpoint that hands out IN_FORCE. */
  const stackFetch = (async (input: string | URL | Request) =>
    String(input).endsWith('/policy')
      ? new Response(IN_FORCE, { status: 200 })
      : new Response(null, { status: 404 })) as typeof fetch;

  async function withPolicyFile(name: string, text: string, stackFile = true) {
    const dir = await project({ key: KEY });
    const file = join(dir, name);
    await writeFile(file, text);
    await writeFile(
      join(dir, '.local/stack.json'),
      JSON.stringify(
        stackInfo(dir, {
          ...(stackFile ? { accessPolicyFile: file } : { accessPolicy: IN_FORCE }),
          control: { url: 'http://127.0.0.1:9', token: 't' },
        }),
      ),
    );
    return dir;
  }

  it("uses the stack's policy in force when its own file is broken, and says so", async () => {
    const cwd = await withPolicyFile('policy.json', '{"scopes":');

    const target = await resolveLocalAdmin({}, cwd, stackFetch);

    expect(target.settings.policy.text).toBe(IN_FORCE);
    expect(target.warning).toMatch(
      /policy\.json is not valid JSON.*; using the policy the running stack keeps in force \(sha256:/,
    );
  });

  it.each([
    [
      'a broken file the operator names, the stack serving an inline policy',
      { ACCESS_POLICY_FILE: 'mine.json' },
      false,
    ],
    [
      'ACCESS_POLICY beside the file, a usage error',
      { ACCESS_POLICY: IN_FORCE, ACCESS_POLICY_FILE: 'policy.json' },
      true,
    ],
  ])('regression (review): never replaces %s', async (_label, env, stackFile) => {
    const cwd = await withPolicyFile('policy.json', '{"scopes":', stackFile);
    await writeFile(join(cwd, 'mine.json'), '{"scopes":');

    const error = await resolveLocalAdmin(env, cwd, stackFetch).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ConfigError);
  });
});
