/**
 * The `tvm` CLI's main, in-process: arguments, environment and streams are
 * parameters; the vend URL is a scripted fetch (requests really signed) and
 * Lambda is aws-sdk-client-mock with the SDK's real exception classes.
 */

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  InvokeCommand,
  type InvokeCommandOutput,
  LambdaClient,
  ResourceNotFoundException,
} from '@aws-sdk/client-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { PROJECT_PACKAGE_NAME } from '../../client/project-script.js';
import 'aws-sdk-client-mock-vitest/extend';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_HELP, type CliIo, MAIN_HELP, main, TOKEN_HELP } from '../../client/cli.js';
import type { ClientClock, FetchFunction } from '../../client/index.js';

const TOKEN = 'tok_cli_unit_0123456789';
const NOW = Date.UTC(2030, 0, 1);
const STACK = {
  functionUrl: 'http://127.0.0.1:8787',
  region: 'eu-west-1',
  providerUrl: 'http://127.0.0.1:9999',
  providerSimulated: true,
  dynamodbEndpoint: 'http://127.0.0.1:8000',
  tableName: 'token-vending-local',
  unscopedScopeMode: 'omit',
  identity: {
    accessKeyId: 'AKIALOCALSTACKFILE01',
    secretAccessKey: 'stackFileSecretAccessKey0000000000000000',
    arn: 'arn:aws:iam::000000000000:role/local-demo',
  },
};

const lambda = mockClient(LambdaClient);

const clock: ClientClock = { now: () => NOW, sleep: async () => undefined };

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** Authorization headers of the requests the run sent. */
  readonly authorizations: string[];
  /** X-Amz-Security-Token headers of the requests the run sent ('' when absent). */
  readonly securityTokens: string[];
  readonly urls: string[];
}

let emptyDir: string;
let stackDir: string;
let brokenStackDir: string;
let sessionStackDir: string;
let badSessionStackDir: string;
/** Has a stack file; its package.json is written by the test that uses it. */
let projectDir: string;
const SESSION_TOKEN = 'stackFileSessionToken/EXAMPLE+0123==';

beforeAll(async () => {
  const root = await mkdtemp(join(tmpdir(), 'tvm-cli-'));
  emptyDir = join(root, 'empty');
  stackDir = join(root, 'stack');
  brokenStackDir = join(root, 'broken');
  await mkdir(emptyDir);
  await mkdir(join(stackDir, '.local'), { recursive: true });
  await writeFile(join(stackDir, '.local/stack.json'), JSON.stringify(STACK));
  await mkdir(join(brokenStackDir, '.local'), { recursive: true });
  await writeFile(join(brokenStackDir, '.local/stack.json'), '{"functionUrl": 1');
  sessionStackDir = join(root, 'session');
  await mkdir(join(sessionStackDir, '.local'), { recursive: true });
  const withToken = (sessionToken: unknown) =>
    JSON.stringify({ ...STACK, identity: { ...STACK.identity, sessionToken } });
  await writeFile(join(sessionStackDir, '.local/stack.json'), withToken(SESSION_TOKEN));
  badSessionStackDir = join(root, 'bad-session');
  await mkdir(join(badSessionStackDir, '.local'), { recursive: true });
  await writeFile(join(badSessionStackDir, '.local/stack.json'), withToken(42));
  projectDir = join(root, 'project');
  await mkdir(join(projectDir, '.local'), { recursive: true });
  await writeFile(join(projectDir, '.local/stack.json'), JSON.stringify(STACK));
  return () => rm(root, { recursive: true, force: true });
});

beforeEach(() => {
  lambda.reset();
});

afterAll(() => {
  lambda.restore();
});

function tokenBody(scope?: string) {
  return {
    access_token: TOKEN,
    token_type: 'Bearer',
    expires_in: 7200,
    expires_at: NOW / 1000 + 7200,
    ...(scope ? { scope } : {}),
  };
}

async function tvm(
  argv: string[],
  options: {
    cwd?: string;
    env?: Record<string, string>;
    answer?: () => Response;
  } = {},
): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const authorizations: string[] = [];
  const securityTokens: string[] = [];
  const urls: string[] = [];
  const fetch: FetchFunction = async (input, init) => {
    urls.push(input);
    const headers = new Headers(init.headers);
    authorizations.push(headers.get('authorization') ?? '');
    securityTokens.push(headers.get('x-amz-security-token') ?? '');
    const scope = new URL(input).searchParams.get('scope') ?? undefined;
    return options.answer ? options.answer() : Response.json(tokenBody(scope));
  };
  const io: CliIo = {
    env: options.env ?? {},
    cwd: options.cwd ?? emptyDir,
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    fetch,
    clock,
  };
  const code = await main(argv, io);
  return { code, stdout, stderr, authorizations, securityTokens, urls };
}

describe('help', () => {
  it.each([
    [['--help'], MAIN_HELP],
    [['-h'], MAIN_HELP],
    [['token', '--help'], TOKEN_HELP],
    [['token', '-h', '--scope', 'x'], TOKEN_HELP],
    [['admin', '--help'], ADMIN_HELP],
  ])('tvm %j prints its help and exits 0', async (argv, help) => {
    const run = await tvm(argv);

    expect(run).toMatchObject({ code: 0, stdout: help, stderr: '' });
  });
});

describe('usage errors exit 2', () => {
  it.each([
    [[], 'tvm: usage: missing command'],
    [['fetch'], "tvm: usage: unknown command 'fetch'"],
    [['token', '--bogus'], "tvm: usage: Unknown option '--bogus'"],
    [['token', 'extra'], "tvm: usage: unexpected argument 'extra'"],
    [['token', '--scope'], "tvm: usage: Option '--scope <value>' argument missing"],
    [['token', '--min-ttl', 'ten', '--url', 'http://127.0.0.1:1'], 'tvm: usage: --min-ttl'],
    [['token', '--min-ttl', '3601', '--url', 'http://127.0.0.1:1'], 'tvm: usage: --min-ttl'],
    [['token'], 'tvm: usage: no vend URL'],
    [['token', '--url', 'not a url'], "tvm: usage: not a URL: 'not a url'"],
    [['token', '--url', 'ftp://vend.example'], 'tvm: invalid_config: '],
    [
      ['token', '--url', 'http://vend.example.com', '--region', 'eu-west-1'],
      'tvm: invalid_config: url must be https: unless its host is loopback',
    ],
    [['token', '--scope', '', '--url', 'http://127.0.0.1:1'], 'tvm: invalid_request: '],
    [['admin'], 'tvm: usage: missing the event JSON'],
    [['admin', '{"action":'], 'tvm: usage: the event is not valid JSON'],
    [['admin', '[]'], 'tvm: usage: the event must be a JSON object with an "action"'],
    [['admin', '{"scope":"x"}'], 'tvm: usage: the event must be a JSON object with an "action"'],
    [['admin', '{"action":"status"}', 'more'], "tvm: usage: unexpected argument 'more'"],
    [['admin', '{"action":"status"}'], 'tvm: usage: no admin target'],
  ])('tvm %j', async (argv, message) => {
    const run = await tvm(argv);

    expect(run.code).toBe(2);
    expect(run.stderr.startsWith(message)).toBe(true);
    expect(run.stderr).toMatch(/Run 'tvm( \w+)? --help' for usage\.\n$/);
    expect(run.stdout).toBe('');
    expect(run.urls).toEqual([]);
  });
});

describe('tvm token', () => {
  it('prints the token as vend-style JSON', async () => {
    const run = await tvm(['token', '--scope', 'ba_1', '--url', 'http://127.0.0.1:8787'], {
      env: { AWS_ACCESS_KEY_ID: 'AKIAENVIRONMENT00001', AWS_SECRET_ACCESS_KEY: 's' },
    });

    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({
      access_token: TOKEN,
      token_type: 'Bearer',
      expires_in: 7200,
      expires_at: NOW / 1000 + 7200,
      scope: 'ba_1',
    });
    expect(run.stdout.endsWith('}\n')).toBe(true);
    expect(run.urls).toEqual(['http://127.0.0.1:8787/token?min_ttl=300&scope=ba_1']);
  });

  it('prints only the Authorization header line with --header', async () => {
    const run = await tvm(['token', '--header', '--min-ttl', '900'], { cwd: stackDir });

    expect(run).toMatchObject({ code: 0, stdout: `Authorization: Bearer ${TOKEN}\n`, stderr: '' });
    expect(run.urls).toEqual(['http://127.0.0.1:8787/token?min_ttl=900']);
  });

  it("signs for the local stack with the stack file's identity and region", async () => {
    const run = await tvm(['token'], { cwd: stackDir });

    expect(run.authorizations[0]).toMatch(
      /Credential=AKIALOCALSTACKFILE01\/\d{8}\/eu-west-1\/lambda\/aws4_request/,
    );
  });

  it("signs with the stack identity's session token when it has one", async () => {
    const run = await tvm(['token'], { cwd: sessionStackDir });

    expect(run.code).toBe(0);
    expect(run.securityTokens).toEqual([SESSION_TOKEN]);
    expect(run.authorizations[0]).toMatch(/SignedHeaders=[^,]*x-amz-security-token/);
    expect(run.authorizations[0]).toContain('Credential=AKIALOCALSTACKFILE01/');
  });

  it('sends no session token for a stack identity without one', async () => {
    const run = await tvm(['token'], { cwd: stackDir });

    expect(run.securityTokens).toEqual(['']);
  });

  it('exits 1 on a stack file whose session token is not a string', async () => {
    const run = await tvm(['token'], { cwd: badSessionStackDir });

    expect(run).toMatchObject({
      code: 1,
      stderr:
        'tvm: invalid_stack_file: .local/stack.json has an identity.sessionToken that is not a string\n',
    });
    expect(run.urls).toEqual([]);
  });

  it('exits 2 when TVM_URL is http: to a host that is not loopback', async () => {
    const run = await tvm(['token'], {
      env: {
        TVM_URL: 'http://abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws',
        AWS_ACCESS_KEY_ID: 'AKIAENVIRONMENT00001',
        AWS_SECRET_ACCESS_KEY: 'secret',
      },
    });

    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^tvm: invalid_config: url must be https: unless/);
    expect(run.urls).toEqual([]);
  });

  it('prefers AWS_ACCESS_KEY_ID from the environment over the stack identity', async () => {
    const run = await tvm(['token'], {
      cwd: stackDir,
      env: {
        AWS_ACCESS_KEY_ID: 'AKIAENVIRONMENT00001',
        AWS_SECRET_ACCESS_KEY: 'secret',
        AWS_SESSION_TOKEN: 'session',
      },
    });

    expect(run.code).toBe(0);
    expect(run.authorizations[0]).toContain('Credential=AKIAENVIRONMENT00001/');
  });

  it('takes TVM_URL over the stack file, and then signs with the environment', async () => {
    const run = await tvm(['token'], {
      cwd: stackDir,
      env: {
        TVM_URL: 'https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.ap-south-1.on.aws',
        AWS_ACCESS_KEY_ID: 'AKIAENVIRONMENT00001',
        AWS_SECRET_ACCESS_KEY: 'secret',
      },
    });

    expect(run.urls[0]).toMatch(/^https:\/\/abcdefghijklmnopqrstuvwxyz012345\.lambda-url\./);
    expect(run.authorizations[0]).toMatch(/AKIAENVIRONMENT00001\/\d{8}\/ap-south-1\/lambda\//);
  });

  it('uses --region over every default', async () => {
    const run = await tvm(['token', '--region', 'sa-east-1'], { cwd: stackDir });

    expect(run.authorizations[0]).toMatch(/\/sa-east-1\/lambda\//);
  });

  it('exits 1 with "tvm: <code>: <title>" when the vend URL refuses', async () => {
    const run = await tvm(['token', '--scope', 'ba_1'], {
      cwd: stackDir,
      answer: () =>
        new Response(
          JSON.stringify({
            status: 403,
            code: 'access_denied',
            title: 'Access denied',
            detail: 'The caller is not granted this scope.',
          }),
          { status: 403, headers: { 'content-type': 'application/problem+json' } },
        ),
    });

    expect(run).toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'tvm: access_denied: Access denied\n',
    });
  });

  it('exits 1 on a 200 that is not a valid token answer, without printing it', async () => {
    const run = await tvm(['token', '--scope', 'ba_1'], {
      cwd: stackDir,
      answer: () => Response.json({ ...tokenBody(), token_type: 'mac' }),
    });

    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'tvm: invalid_response: Invalid token answer: token_type is not Bearer\n',
    );
    expect(run.stdout + run.stderr).not.toContain(TOKEN);
  });

  it.each([
    ['a NUL byte', `${TOKEN}\u0000rest`],
    ['a line break', `${TOKEN}\r\nX-Injected: 1`],
    ['a space', `${TOKEN} rest`],
  ])(
    'regression: tvm token and tvm exec refuse a token with %s, never printing it',
    async (_, token) => {
      for (const argv of [
        ['token', '--scope', 'ba_1'],
        ['exec', '--scope', 'ba_1', '--', process.execPath, '-e', ''],
      ]) {
        const run = await tvm(argv, {
          cwd: stackDir,
          answer: () => Response.json({ ...tokenBody('ba_1'), access_token: token }),
        });

        expect(run.code).toBe(1);
        expect(run.stderr).toBe(
          'tvm: invalid_response: Invalid token answer: access_token is not a bearer token\n',
        );
        expect(run.stdout + run.stderr).not.toContain(TOKEN);
      }
    },
  );

  it('regression: names an unexpected error, never quoting its message (it may hold what it was given)', async () => {
    let stderr = '';
    const code = await main(['token', '--scope', 'ba_1'], {
      env: {},
      cwd: stackDir,
      stdout: {
        write: (text: string) => {
          throw Object.assign(new TypeError(`cannot write ${text}`), { code: 'ERR_SOMETHING' });
        },
      },
      stderr: { write: (text: string) => (stderr += text) },
      fetch: async () => Response.json(tokenBody('ba_1')),
      clock,
    });

    expect(code).toBe(1);
    expect(stderr).toBe('tvm: internal_error: TypeError (ERR_SOMETHING)\n');
  });

  it('exits 1 when AWS_ACCESS_KEY_ID comes without its secret', async () => {
    const run = await tvm(['token'], { cwd: stackDir, env: { AWS_ACCESS_KEY_ID: 'AKIAX' } });

    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'tvm: credentials_unavailable: AWS_ACCESS_KEY_ID is set without AWS_SECRET_ACCESS_KEY\n',
    );
    expect(run.urls).toEqual([]);
  });

  it('ignores a broken stack file when the URL is given', async () => {
    const run = await tvm(['token', '--url', 'http://127.0.0.1:8787'], {
      cwd: brokenStackDir,
      env: { AWS_ACCESS_KEY_ID: 'AKIAENVIRONMENT00001', AWS_SECRET_ACCESS_KEY: 'env-secret' },
    });

    expect(run.code).toBe(0);
  });

  it('exits 1 on a stack file it cannot read', async () => {
    const run = await tvm(['token'], { cwd: brokenStackDir });

    expect(run).toMatchObject({
      code: 1,
      stderr: 'tvm: invalid_stack_file: .local/stack.json is not JSON\n',
    });
  });
});

describe('tvm admin', () => {
  const payload = (value: unknown) =>
    new TextEncoder().encode(JSON.stringify(value)) as InvokeCommandOutput['Payload'];

  it('answers not_available where ./package.json has no admin script, and exits 1', async () => {
    const run = await tvm(['admin', '{"action":"status"}'], { cwd: stackDir });

    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'tvm: not_available: no "admin" script in ./package.json: run tvm admin in the token ' +
        'vending project directory (where npm start runs), or pass --function NAME\n',
    );
    expect(lambda).not.toHaveReceivedCommand(InvokeCommand);
  });

  it("regression: runs no other project's admin script, whose exit 0 would read as done", async () => {
    await writeFile(
      join(projectDir, 'package.json'),
      JSON.stringify({ name: 'some-service', scripts: { admin: 'node -e "process.exit(0)"' } }),
    );

    const run = await tvm(['admin', '{"action":"status"}'], { cwd: projectDir });

    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      "tvm: not_available: ./package.json is not the token vending project's " +
        '(token-vending-functions): run tvm admin in the token vending project directory ' +
        '(where npm start runs), or pass --function NAME\n',
    );
  });

  it('runs npm run admin in the project directory, passing its output and exit code through', async () => {
    // A stand-in for the project's admin script: echoes its argument and an
    // environment variable, writes to stderr and exits 3.
    await writeFile(
      join(projectDir, 'package.json'),
      JSON.stringify({
        name: PROJECT_PACKAGE_NAME,
        scripts: {
          admin:
            'node -e "process.stdout.write(JSON.stringify({argv: process.argv.slice(1), marker: process.env.MARKER})); process.stderr.write(\'admin: busy: stand-in\\n\'); process.exit(3)"',
        },
      }),
    );

    const run = await tvm(['admin', '{"action":"refresh", "scope":"ba_1"}'], {
      cwd: projectDir,
      env: { PATH: process.env.PATH ?? '', MARKER: 'from-tvm' },
    });

    expect(run).toMatchObject({ code: 3, stderr: 'admin: busy: stand-in\n' });
    expect(JSON.parse(run.stdout)).toEqual({
      argv: ['{"action":"refresh","scope":"ba_1"}'],
      marker: 'from-tvm',
    });
    expect(lambda).not.toHaveReceivedCommand(InvokeCommand);
  });

  it('invokes the function with --function and prints its payload', async () => {
    lambda
      .on(InvokeCommand)
      .resolves({ StatusCode: 200, Payload: payload({ scopes: [{ scope: 'ba_1' }] }) });

    const run = await tvm(
      ['admin', '{"action":"invalidate","all":true}', '--function', 'tvm-admin'],
      { env: { AWS_REGION: 'eu-west-1' } },
    );

    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toEqual({ scopes: [{ scope: 'ba_1' }] });
    expect(lambda).toHaveReceivedCommandTimes(InvokeCommand, 1);
    const input = lambda.commandCalls(InvokeCommand)[0]?.args[0].input;
    expect(input).toMatchObject({ FunctionName: 'tvm-admin', InvocationType: 'RequestResponse' });
    expect(JSON.parse(new TextDecoder().decode(input?.Payload as Uint8Array))).toEqual({
      action: 'invalidate',
      all: true,
    });
    const client = lambda.call(0).thisValue as LambdaClient;
    expect(await client.config.region()).toBe('eu-west-1');
  });

  it('regression: passes the documented short form {"all":true} on, which has no action', async () => {
    lambda.on(InvokeCommand).resolves({
      StatusCode: 200,
      Payload: payload({ invalidated: ['ba_1'], not_cached: [], note: 'n' }),
    });

    const run = await tvm(['admin', '{"all":true}', '--function', 'tvm-admin'], {
      env: { AWS_REGION: 'eu-west-1' },
    });

    expect(run).toMatchObject({ code: 0, stderr: '' });
    const input = lambda.commandCalls(InvokeCommand)[0]?.args[0].input;
    expect(JSON.parse(new TextDecoder().decode(input?.Payload as Uint8Array))).toEqual({
      all: true,
    });
  });

  it('uses --region for the Lambda client', async () => {
    lambda.on(InvokeCommand).resolves({ StatusCode: 200, Payload: payload(null) });

    const run = await tvm([
      'admin',
      '{"action":"status"}',
      '--function',
      'arn:aws:lambda:us-west-2:111122223333:function:tvm-admin',
      '--region',
      'us-west-2',
    ]);

    expect(run).toMatchObject({ code: 0, stdout: 'null\n' });
    const client = lambda.call(0).thisValue as LambdaClient;
    expect(await client.config.region()).toBe('us-west-2');
  });

  it('exits 1 on a function error, naming its type and message', async () => {
    lambda.on(InvokeCommand).resolves({
      StatusCode: 200,
      FunctionError: 'Unhandled',
      Payload: payload({ errorType: 'InvalidEventError', errorMessage: 'unknown action "x"' }),
    });

    const run = await tvm(['admin', '{"action":"x"}', '--function', 'tvm-admin'], {
      env: { AWS_REGION: 'eu-west-1' },
    });

    expect(run).toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'tvm: function_error: InvalidEventError: unknown action "x"\n',
    });
  });

  it('exits 1 when Lambda refuses the invocation', async () => {
    lambda.on(InvokeCommand).rejects(
      new ResourceNotFoundException({
        $metadata: { httpStatusCode: 404 },
        message: 'Function not found: tvm-admin',
      }),
    );

    const run = await tvm(['admin', '{"action":"status"}', '--function', 'tvm-admin'], {
      env: { AWS_REGION: 'eu-west-1' },
    });

    expect(run).toMatchObject({
      code: 1,
      stderr: 'tvm: invoke_failed: ResourceNotFoundException: Function not found: tvm-admin\n',
    });
  });
});
