/**
 * The client as a service team gets it: `npm pack` of client/ (the build the
 * test run made), installed with `--omit=dev` into a fresh project under the
 * system temp directory, where nothing of this repository can be resolved.
 * There the library is imported and used, its types compile under
 * `tsc --strict`, and `npx tvm` runs with plain node against a local stack
 * running in this process.
 */
import { execFile } from 'node:child_process';
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEMO_IDENTITY } from '../../local/local-identities.js';
import { type LocalStack, startLocalStack } from '../../local/stack.js';
import { CLIENT_PACKAGE_NAME } from '../support/client-package.js';

const ROOT = resolve(import.meta.dirname, '../..');
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

/** What this repository installs that the client package must not bring: build and test tools, the functions' own dependencies. */
const NOT_SHIPPED = [
  'typescript',
  'tsx',
  'esbuild',
  'vitest',
  '@biomejs',
  '@types',
  '@aws-lambda-powertools',
  'valibot',
];

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * This process's environment without what would point a child at this
 * repository or sign for it: `npm_*` (set when the tests run under `npm test`,
 * e.g. npm_config_local_prefix), AWS_* and NODE_OPTIONS.
 */
function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined || /^(npm_|aws_|node_options$|vitest)/i.test(name)) continue;
    env[name] = value;
  }
  return { ...env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', ...extra };
}

function run(
  command: string,
  args: readonly string[],
  options: { cwd: string; env?: Record<string, string>; timeout?: number },
): Promise<Run> {
  return new Promise((done) => {
    execFile(
      command,
      [...args],
      { cwd: options.cwd, env: cleanEnv(options.env), timeout: options.timeout ?? 30_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        done({ code, stdout, stderr });
      },
    );
  });
}

/** Runs a command that must succeed; its output in the failure message. */
async function mustRun(
  command: string,
  args: readonly string[],
  options: { cwd: string; env?: Record<string, string>; timeout?: number },
): Promise<string> {
  const result = await run(command, args, options);
  if (result.code !== 0) {
    throw new Error(`${command} ${args.join(' ')} exited ${result.code}:\n${result.stderr}`);
  }
  return result.stdout;
}

const npmInstall = (cwd: string, args: readonly string[]) =>
  mustRun('npm', ['install', ...args, '--prefer-offline', '--no-audit', '--no-fund'], {
    cwd,
    timeout: 120_000,
  });

let root: string;
let app: string;
let packed: { files: Array<{ path: string }>; filename: string };
let stack: LocalStack;
let demoEnv: Record<string, string>;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'tvm-package-it-'));
  app = join(root, 'service');
  await mkdir(app);
  [stack] = await Promise.all([
    startLocalStack(
      {
        PORT: '0',
        DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'),
        TABLE_NAME: `client-package-${process.pid}-${Date.now()}`,
        LOCAL_SECRETS_DIR: join(root, 'secrets'),
      },
      {
        stackFile: null,
        logger: new Logger({ serviceName: 'client-package-test', logLevel: 'SILENT' }),
      },
    ),
    (async () => {
      // client/dist is fresh: test/support/build-client.ts built it for this run.
      const json = await mustRun(
        'npm',
        ['pack', '-w', 'client', '--ignore-scripts', '--json', '--pack-destination', root],
        { cwd: ROOT },
      );
      [packed] = JSON.parse(json);
      await writeFile(
        join(app, 'package.json'),
        `${JSON.stringify({ name: 'a-service', private: true, type: 'module' })}\n`,
      );
      await npmInstall(app, [join(root, packed.filename), '--omit=dev']);
    })(),
  ]);
  demoEnv = {
    AWS_ACCESS_KEY_ID: DEMO_IDENTITY.accessKeyId,
    AWS_SECRET_ACCESS_KEY: DEMO_IDENTITY.secretAccessKey,
    AWS_REGION: stack.info.region,
  };
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  if (root) await rm(root, { recursive: true, force: true });
});

describe('the tarball', () => {
  it('holds the built JavaScript, its declarations, the README and package.json: no sources', () => {
    const paths = packed.files.map((file) => file.path);

    expect(paths).toEqual(
      expect.arrayContaining([
        'package.json',
        'README.md',
        'dist/index.js',
        'dist/index.d.ts',
        'dist/tvm.js',
      ]),
    );
    expect(paths.filter((path) => !/^dist\/[\w-]+\.(js|d\.ts|js\.map)$/.test(path))).toEqual([
      'README.md',
      'package.json',
    ]);
  });

  it('installs with --omit=dev as a copy, with only runtime dependencies and no dev tools', async () => {
    const installed = join(app, `node_modules/${CLIENT_PACKAGE_NAME}`);
    const top = await readdir(join(app, 'node_modules'));
    const scoped = (
      await Promise.all(
        top
          .filter((name) => name.startsWith('@'))
          .map(async (scope) =>
            (await readdir(join(app, 'node_modules', scope))).map((name) => `${scope}/${name}`),
          ),
      )
    ).flat();

    expect((await lstat(installed)).isSymbolicLink()).toBe(false);
    expect(scoped).toEqual(
      expect.arrayContaining([
        '@aws-crypto/sha256-js',
        '@aws-sdk/credential-providers',
        '@smithy/signature-v4',
      ]),
    );
    const names = [...top, ...scoped];
    expect(
      names.filter((name) =>
        NOT_SHIPPED.some((tool) => name === tool || name.startsWith(`${tool}/`)),
      ),
    ).toEqual([]);
    // The optional peer stays out: only `tvm admin --function` needs it.
    expect(names).not.toContain('@aws-sdk/client-lambda');
  });
});

describe('the library, imported by a service', () => {
  it('gets a token through the default credential chain, and a TokenVendingError with a code', async () => {
    await writeFile(
      join(app, 'get-token.mjs'),
      [
        `import { TokenVendingClient, TokenVendingError } from '${CLIENT_PACKAGE_NAME}';`,
        'const client = new TokenVendingClient({ url: process.argv[2] });',
        "const token = await client.getToken({ scope: 'ba_demo_1' });",
        'let denied;',
        "try { await client.getToken({ scope: 'ba_not_granted' }); } catch (error) {",
        '  denied = error instanceof TokenVendingError ? error.code : String(error);',
        '}',
        'console.log(JSON.stringify({ tokenType: token.tokenType, scope: token.scope, ',
        "  simulated: token.accessToken.startsWith('sim_'), denied }));",
      ].join('\n'),
    );

    const out = await mustRun(process.execPath, ['get-token.mjs', stack.info.functionUrl], {
      cwd: app,
      env: demoEnv,
    });

    expect(JSON.parse(out)).toEqual({
      tokenType: 'Bearer',
      scope: 'ba_demo_1',
      simulated: true,
      denied: 'access_denied',
    });
  });

  it('has types that compile under tsc --strict in the service, and are not any', async () => {
    // A Node service's usual setup: @types/node, no DOM lib, no skipLibCheck.
    await npmInstall(app, ['--save-dev', '@types/node@20.19.43']);
    await writeFile(
      join(app, 'check.ts'),
      [
        'import {',
        '  type Token,',
        '  TokenVendingClient,',
        '  TokenVendingError,',
        '  type TokenVendingErrorCode,',
        `} from '${CLIENT_PACKAGE_NAME}';`,
        '',
        "const client = new TokenVendingClient({ url: 'https://abc123.lambda-url.eu-west-1.on.aws' });",
        "export const header: Promise<string> = client.authorizationHeader('ba_123');",
        "export const token: Promise<Token> = client.getToken({ scope: 'ba_123', minTtl: 60 });",
        'export const code = (error: unknown): TokenVendingErrorCode | undefined =>',
        '  error instanceof TokenVendingError ? error.code : undefined;',
        "export const bearer: 'Bearer' = (await token).tokenType;",
        '// @ts-expect-error minTtl is a number of seconds',
        "client.getToken({ minTtl: '60' });",
        '// @ts-expect-error not a code the client has',
        "export const unknownCode: TokenVendingErrorCode = 'teapot';",
      ].join('\n'),
    );

    const result = await run(
      process.execPath,
      [
        TSC,
        '--strict',
        '--noEmit',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        '--target',
        'es2022',
        '--lib',
        'es2022',
        '--types',
        'node',
        'check.ts',
      ],
      { cwd: app },
    );

    expect(result).toEqual({ code: 0, stdout: '', stderr: '' });
  }, 60_000);
});

describe('npx tvm, run with plain node', () => {
  it('starts with a node shebang, with neither tsx nor TypeScript in reach', async () => {
    const bin = await readFile(
      join(app, `node_modules/${CLIENT_PACKAGE_NAME}/dist/tvm.js`),
      'utf8',
    );
    const resolvable = await mustRun(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "for (const name of ['tsx', 'typescript']) { try { import.meta.resolve(name); console.log(name); } catch {} }",
      ],
      { cwd: join(app, `node_modules/${CLIENT_PACKAGE_NAME}/dist`) },
    );

    expect(bin.split('\n')[0]).toBe('#!/usr/bin/env node');
    expect(resolvable).toBe('');
  });

  it('tvm --help exits 0 with usage', async () => {
    const result = await run('npx', ['tvm', '--help'], { cwd: app });

    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: tvm <command>/);
  });

  it('tvm token prints a token from the local stack, signed with the AWS_* credentials', async () => {
    const result = await run(
      'npx',
      ['tvm', 'token', '--scope', 'ba_demo_1', '--url', stack.info.functionUrl],
      { cwd: app, env: demoEnv },
    );

    expect(result.code).toBe(0);
    const body = JSON.parse(result.stdout);
    expect(body).toMatchObject({ token_type: 'Bearer', scope: 'ba_demo_1' });
    expect(body.access_token).toMatch(/^sim_/);
    expect(result.stderr).not.toMatch(/sim_/);
  });

  it('tvm admin --function says what to install when the optional Lambda client is missing', async () => {
    const result = await run('npx', ['tvm', 'admin', '{"action":"status"}', '--function', 'f'], {
      cwd: app,
      env: { AWS_REGION: 'eu-west-1' },
    });

    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^tvm: not_available: tvm admin --function needs @aws-sdk\/client-lambda: install it/m,
    );
  });
});
