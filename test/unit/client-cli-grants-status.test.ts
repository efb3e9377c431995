/**
 * `tvm grants` and `tvm status`, in-process: the vend URL is a scripted fetch,
 * Lambda is aws-sdk-client-mock, and the local admin a stand-in `admin` script
 * in a directory's package.json.
 */

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvokeCommand, type InvokeCommandOutput, LambdaClient } from '@aws-sdk/client-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { PROJECT_PACKAGE_NAME } from '../../client/project-script.js';
import 'aws-sdk-client-mock-vitest/extend';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type CliIo, GRANTS_HELP, MAIN_HELP, main, STATUS_HELP } from '../../client/cli.js';
import type { FetchFunction } from '../../client/index.js';
import { formatStatus, isoTime } from '../../client/status-table.js';

const NOW = Date.UTC(2030, 0, 1);
const NOW_S = NOW / 1000;
const STACK = {
  functionUrl: 'http://127.0.0.1:8787',
  region: 'eu-west-1',
  identity: {
    accessKeyId: 'AKIALOCALSTACKFILE01',
    secretAccessKey: 'stackFileSecretAccessKey0000000000000000',
    arn: 'arn:aws:sts::000000000000:assumed-role/local-demo/s',
  },
};
const GRANTS = {
  principal: STACK.identity.arn,
  scopes: ['ba_demo_1', 'ba_demo_2'],
  unscoped: true,
  policy_version: 'sha256:0123456789ab',
};
/** An admin status answer: one token mid-life and held, one expired, one key job. */
const STATUS = {
  now: NOW_S,
  policy: {
    version: 'sha256:0123456789ab',
    loaded_at: NOW_S - 60,
    scopes: 2,
    principals: 1,
    key_issuing_ids: 1,
  },
  tokens: [
    {
      scope: 'ba_demo_1',
      state: 'valid',
      issued_at: NOW_S - 600,
      expires_at: NOW_S + 6600,
      seconds_left: 6600,
      lease: { held: true, owner: 'i-1', until: NOW_S + 10 },
      in_use: true,
      last_used_at: NOW_S - 5,
    },
    {
      scope: 'unscoped',
      state: 'expired',
      issued_at: NOW_S - 7300,
      expires_at: NOW_S - 100,
      seconds_left: 0,
      lease: { held: false },
      in_use: false,
      last_failure: { at: NOW_S - 30, code: 'upstream_unavailable' },
    },
  ],
  key_jobs: [
    {
      business_application_id: 'ba_demo_1',
      state: 'stored',
      attempts: 1,
      issue_count: 1,
      stored_at: NOW_S - 3600,
      secret_name: 'token-vending/local/basic-auth/ba_demo_1',
      awaiting_store: false,
    },
  ],
};

const lambda = mockClient(LambdaClient);
let root: string;
let emptyDir: string;
let stackDir: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'tvm-grants-status-'));
  emptyDir = join(root, 'empty');
  stackDir = join(root, 'stack');
  await mkdir(emptyDir);
  await mkdir(join(stackDir, '.local'), { recursive: true });
  await writeFile(join(stackDir, '.local/stack.json'), JSON.stringify(STACK));
});
beforeEach(() => lambda.reset());
afterAll(async () => {
  lambda.restore();
  await rm(root, { recursive: true, force: true });
});

async function tvm(
  argv: string[],
  options: { cwd?: string; env?: Record<string, string>; answer?: () => Response } = {},
) {
  let stdout = '';
  let stderr = '';
  const sent: Array<{ url: string; authorization: string }> = [];
  const fetch: FetchFunction = async (url, init) => {
    sent.push({ url, authorization: new Headers(init.headers).get('authorization') ?? '' });
    return options.answer ? options.answer() : Response.json(GRANTS);
  };
  const io: CliIo = {
    env: options.env ?? {},
    cwd: options.cwd ?? emptyDir,
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    fetch,
    clock: { now: () => NOW, sleep: async () => undefined },
  };
  const code = await main(argv, io);
  return { code, stdout, stderr, sent };
}

const payload = (value: unknown) =>
  new TextEncoder().encode(JSON.stringify(value)) as InvokeCommandOutput['Payload'];

describe('tvm grants', () => {
  it("prints the principal, unscoped access and scopes of the stack file's identity", async () => {
    const run = await tvm(['grants'], { cwd: stackDir });

    expect(run.code).toBe(0);
    expect(run.stdout).toBe(
      [
        `principal   ${STACK.identity.arn}`,
        'unscoped    granted',
        'scopes (2)  ba_demo_1',
        '            ba_demo_2',
        'policy      sha256:0123456789ab',
        '',
      ].join('\n'),
    );
    expect(run.sent.map((request) => request.url)).toEqual(['http://127.0.0.1:8787/grants']);
    expect(run.sent[0]?.authorization).toContain('Credential=AKIALOCALSTACKFILE01/');
  });

  it('prints the answer as one line of JSON with --json', async () => {
    const run = await tvm(['grants', '--json'], { cwd: stackDir });

    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual(GRANTS);
  });

  it('says "none" and "not granted" for a caller granted nothing', async () => {
    const run = await tvm(['grants', '--url', 'https://abc.lambda-url.eu-west-1.on.aws'], {
      env: { AWS_ACCESS_KEY_ID: 'AKIAOTHER00000000001', AWS_SECRET_ACCESS_KEY: 'x' },
      answer: () =>
        Response.json({ principal: 'arn:aws:iam::1:user/u', scopes: [], unscoped: false }),
    });

    expect(run.stdout).toContain('unscoped    not granted\nscopes (0)  none\n');
  });

  it('exits 1 with "tvm: <code>: <title>" when the vend URL refuses', async () => {
    const run = await tvm(['grants'], {
      cwd: stackDir,
      answer: () => new Response('{"Message":"Forbidden"}', { status: 403 }),
    });

    expect(run).toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'tvm: access_denied: Forbidden by the Function URL (IAM)\n',
    });
  });

  it('exits 2 on an argument, and without a URL', async () => {
    const extra = await tvm(['grants', 'ba_1'], { cwd: stackDir });
    const noUrl = await tvm(['grants']);

    expect(extra.code).toBe(2);
    expect(extra.stderr).toContain("Run 'tvm grants --help'");
    expect(noUrl.code).toBe(2);
    expect(noUrl.sent).toEqual([]);
  });

  it('has --help, and is listed in tvm --help', async () => {
    expect(await tvm(['grants', '--help'])).toMatchObject({ code: 0, stdout: GRANTS_HELP });
    expect(MAIN_HELP).toMatch(/^ {2}grants /m);
  });
});

describe('tvm status', () => {
  it('prints tables with ISO 8601 times and seconds left, from the admin function', async () => {
    lambda.on(InvokeCommand).resolves({ StatusCode: 200, Payload: payload(STATUS) });

    const run = await tvm(['status', '--function', 'tvm-admin'], {
      env: { AWS_REGION: 'eu-west-1' },
    });

    expect(run.code).toBe(0);
    const lines = run.stdout.split('\n');
    expect(lines[0]).toBe('now     2030-01-01T00:00:00Z');
    expect(lines[1]).toBe(
      'policy  sha256:0123456789ab, loaded 2029-12-31T23:59:00Z: 2 scopes, 1 principals, 1 key-issuing ids',
    );
    const row = lines.find((line) => line.startsWith('ba_demo_1 '))?.split(/\s{2,}/);
    expect(row).toEqual([
      'ba_demo_1',
      'valid',
      '2029-12-31T23:50:00Z',
      '2030-01-01T01:50:00Z',
      '6600',
      'yes',
      '2029-12-31T23:59:55Z',
      'held until 2030-01-01T00:00:10Z by i-1',
      '-',
    ]);
    expect(run.stdout).toMatch(
      /^unscoped +expired .* upstream_unavailable at 2029-12-31T23:59:30Z$/m,
    );
    expect(run.stdout).toMatch(/^ba_demo_1 +stored +1 +1 +2029-12-31T23:00:00Z +token-vending/m);
    expect(run.stdout).not.toMatch(/\b1\d{9}\b/); // no epoch seconds left
    const input = lambda.commandCalls(InvokeCommand)[0]?.args[0].input;
    expect(JSON.parse(new TextDecoder().decode(input?.Payload as Uint8Array))).toEqual({
      action: 'status',
    });
  });

  it('prints the answer as tvm admin does with --json', async () => {
    lambda.on(InvokeCommand).resolves({ StatusCode: 200, Payload: payload(STATUS) });

    const run = await tvm(['status', '--json', '--function', 'tvm-admin'], {
      env: { AWS_REGION: 'eu-west-1' },
    });

    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`${JSON.stringify(STATUS, null, 2)}\n`);
  });

  it("runs the local stack's npm run admin with the status event", async () => {
    const project = join(root, 'project');
    await mkdir(join(project, '.local'), { recursive: true });
    await writeFile(join(project, '.local/stack.json'), JSON.stringify(STACK));
    // A stand-in admin script: answers an empty status when it gets the status event.
    await writeFile(
      join(project, 'status.json'),
      JSON.stringify({ ...STATUS, tokens: [], key_jobs: [] }),
    );
    await writeFile(
      join(project, 'package.json'),
      JSON.stringify({
        name: PROJECT_PACKAGE_NAME,
        scripts: {
          admin: `node -e "if (process.argv[1] !== '{\\"action\\":\\"status\\"}') process.exit(9); process.stdout.write(require('fs').readFileSync('status.json', 'utf8'))"`,
        },
      }),
    );

    const run = await tvm(['status'], { cwd: project, env: { PATH: process.env.PATH ?? '' } });

    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Tokens: none cached\n\nKey jobs: none\n');
    expect(lambda).not.toHaveReceivedCommand(InvokeCommand);
  });

  it('exits 2 with no admin target, and 1 on an answer that is not a status', async () => {
    lambda.on(InvokeCommand).resolves({ StatusCode: 200, Payload: payload({ refreshed: [] }) });

    const none = await tvm(['status']);
    const odd = await tvm(['status', '--function', 'f'], { env: { AWS_REGION: 'eu-west-1' } });

    expect(none.code).toBe(2);
    expect(none.stderr).toContain('no admin target');
    expect(odd).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('tvm: invalid_response:'),
    });
  });

  it('has --help', async () => {
    expect(await tvm(['status', '--help'])).toMatchObject({ code: 0, stdout: STATUS_HELP });
  });
});

describe('the status table', () => {
  it('writes epoch seconds as ISO 8601 to the second, and - for what is missing', () => {
    expect(isoTime(1_893_456_000)).toBe('2030-01-01T00:00:00Z');
    expect(isoTime(undefined)).toBe('-');
    expect(isoTime('1893456000')).toBe('-');
  });

  it('shows an unusable item with - for its times', () => {
    const text = formatStatus({
      now: NOW_S,
      policy: STATUS.policy,
      tokens: [{ scope: 'ba_x', state: 'unusable', lease: { held: false }, in_use: false }],
      key_jobs: [],
    });

    expect(text).toMatch(/^ba_x +unusable +- +- +- +no +- +- +-$/m);
  });
});
