/**
 * The library's local default: given neither a URL nor credentials, a
 * TokenVendingClient signs for the local stack named in `./.local/stack.json`
 * (its URL, region and identity), as `tvm` does. A URL or credentials given,
 * or `localStack: false`, and the file is never used. Each test runs in its own
 * working directory (the test files run in child processes, where chdir works).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type FetchFunction,
  TokenVendingClient,
  type TokenVendingClientOptions,
  TokenVendingError,
} from '../../client/index.js';

const NOW = Date.UTC(2030, 0, 1);
const clock = { now: () => NOW, sleep: async () => undefined };
const STACK = {
  functionUrl: 'http://127.0.0.1:8787',
  region: 'eu-central-1',
  identity: {
    accessKeyId: 'AKIALOCALSTACKFILE01',
    secretAccessKey: 'stackFileSecretAccessKey0000000000000000',
    arn: 'arn:aws:sts::000000000000:assumed-role/local-demo/s',
  },
};
const GIVEN = {
  accessKeyId: 'AKIAGIVENCREDENTIALS',
  secretAccessKey: 'givenSecretAccessKey0000000000000000000',
};

let root: string;
const home = process.cwd();

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'tvm-local-default-'));
});
afterEach(() => process.chdir(home));
afterAll(() => rm(root, { recursive: true, force: true }));

/** A fresh working directory holding `stack` as `.local/stack.json` (text as is, or JSON). */
async function workIn(stack?: unknown): Promise<void> {
  const dir = await mkdtemp(join(root, 'cwd-'));
  if (stack !== undefined) {
    await mkdir(join(dir, '.local'));
    const text = typeof stack === 'string' ? stack : JSON.stringify(stack);
    await writeFile(join(dir, '.local/stack.json'), text);
  }
  process.chdir(dir);
}

/** The client's one request: where it went and the credential scope it was signed with. */
async function firstRequest(options: Partial<TokenVendingClientOptions>) {
  const sent: Array<{ url: string; credential: string }> = [];
  const fetch: FetchFunction = async (url, init) => {
    const authorization = new Headers(init.headers).get('authorization') ?? '';
    sent.push({ url, credential: /Credential=([^,]+)/.exec(authorization)?.[1] ?? '' });
    return Response.json({
      access_token: 'tok_local_default_0123',
      token_type: 'Bearer',
      expires_in: 7200,
      expires_at: NOW / 1000 + 7200,
    });
  };
  await new TokenVendingClient({ fetch, clock, ...options }).getToken();
  return sent[0];
}

function configError(options: Partial<TokenVendingClientOptions>): TokenVendingError {
  try {
    new TokenVendingClient(options);
  } catch (error) {
    if (error instanceof TokenVendingError) return error;
    throw error;
  }
  throw new Error('expected invalid_config');
}

describe('a client given neither url nor credentials', () => {
  it("signs for the stack file's URL, with its identity and region", async () => {
    await workIn(STACK);

    const sent = await firstRequest({});

    expect(sent?.url).toBe('http://127.0.0.1:8787/token?min_ttl=300');
    expect(sent?.credential).toMatch(/^AKIALOCALSTACKFILE01\/\d{8}\/eu-central-1\/lambda\//);
  });

  it('is what new TokenVendingClient() with no argument at all does', async () => {
    await workIn(STACK);
    const withStack = () => new TokenVendingClient();
    expect(withStack).not.toThrow();

    await workIn();
    expect(withStack).toThrowError(expect.objectContaining({ code: 'invalid_config' }));
  });

  it('takes an explicit region over the stack file', async () => {
    await workIn(STACK);

    const sent = await firstRequest({ region: 'us-west-2' });

    expect(sent?.credential).toMatch(/\/us-west-2\/lambda\//);
  });

  it('is an invalid_config error without a stack file, saying where it looked', async () => {
    await workIn();

    const error = configError({});

    expect(error.code).toBe('invalid_config');
    expect(error.title).toContain('url is required');
    expect(error.title).toContain(process.cwd());
  });

  it.each([
    ['not JSON', '{"functionUrl": 1'],
    ['without an identity', JSON.stringify({ functionUrl: STACK.functionUrl, region: 'x' })],
    [
      'for a URL off loopback',
      JSON.stringify({ ...STACK, functionUrl: 'https://vend.example.com' }),
    ],
  ])('is an invalid_config error for a stack file %s', async (_label, text) => {
    await workIn(text);

    expect(configError({}).code).toBe('invalid_config');
  });
});

describe('the stack file is not used', () => {
  it('when a url is given, even for the same URL: the default chain signs', async () => {
    await workIn(STACK);
    const credentials = async () => GIVEN;

    const sent = await firstRequest({ url: 'http://127.0.0.1:8787', credentials });

    expect(sent?.credential).toMatch(/^AKIAGIVENCREDENTIALS\/\d{8}\/us-east-1\//);
  });

  it('when credentials are given without a url: url is required', async () => {
    await workIn(STACK);

    const error = configError({ credentials: GIVEN });

    expect(error.code).toBe('invalid_config');
    expect(error.title).toContain('url is required with credentials');
  });

  it('with localStack: false, as production code passes it', async () => {
    await workIn(STACK);

    const error = configError({ localStack: false });

    expect(error.code).toBe('invalid_config');
    expect(error.title).toBe('url is required');
  });

  it('with localStack: true and a url: they exclude each other', async () => {
    await workIn(STACK);

    expect(configError({ localStack: true, url: 'http://127.0.0.1:8787' }).title).toContain(
      'exclude each other',
    );
  });
});
