import { type ChildProcess, execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { readStackFile } from '../../client/stack-file.js';
import { ConfigError } from '../../functions/core/errors.js';
import { DEMO_IDENTITY, type LocalIdentity } from '../../local/local-identities.js';
import { startProviderSimulator } from '../../local/provider-simulator.js';
import {
  curlCommand,
  type LocalStack,
  SECRET_VARIABLES,
  type StackInfo,
  startLocalStack,
  tryLines,
} from '../../local/stack.js';
import { startNpmStart } from '../support/npm-start.js';
import { quietLogger } from '../support/vend-harness.js';

const run = promisify(execFile);
const hasCurl = !spawnSync('curl', ['--version'], { stdio: 'ignore' }).error;

/** What a real Function URL passes for a role session. */
const DEMO_SESSION_ARN = 'arn:aws:sts::000000000000:assumed-role/local-demo/local-demo-session';

/** Temporary credentials of a role session, in LOCAL_IDENTITIES. */
const SESSION: LocalIdentity & { sessionToken: string } = {
  accessKeyId: 'ASIALOCALSESSION0001',
  secretAccessKey: 'sessionSecretAccessKey000000000000000000',
  sessionToken: 'IQoJb3JpZ2luX2VjEXAMPLE/session+token==',
  arn: 'arn:aws:sts::111122223333:assumed-role/reporting/session-7',
};

async function signedFetch(
  url: string,
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string },
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

/** The role of the demo identity's session, as the access policy names it. */
const DEMO_ROLE_ARN = 'arn:aws:iam::000000000000:role/local-demo';

describe('the local stack in-process', () => {
  let stack: LocalStack;
  const logger = quietLogger();
  const logged = vi.spyOn(logger, 'info');
  beforeAll(async () => {
    stack = await startLocalStack(
      {
        PORT: '0',
        DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'),
        TABLE_NAME: `stack-${Date.now()}`,
      },
      { stackFile: null, logger },
    );
  });
  afterAll(async () => stack?.stop());

  it('passes the demo caller as an STS assumed-role ARN, granted by the default policy', async () => {
    logged.mockClear();

    const response = await signedFetch(`${stack.info.functionUrl}/token?scope=ba_demo_2`, {
      accessKeyId: stack.info.identity.accessKeyId,
      secretAccessKey: stack.info.identity.secretAccessKey,
    });

    expect(response.status).toBe(200);
    expect(stack.info.identity.arn).toBe(DEMO_SESSION_ARN);
    expect(stack.info.identity.sessionToken).toBeUndefined();
    expect(logged).toHaveBeenCalledWith(
      'vend',
      expect.objectContaining({ principal: DEMO_SESSION_ARN, scope: 'ba_demo_2', status: 200 }),
    );
  });

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

describe('a LOCAL_IDENTITIES identity with a session token', () => {
  let stack: LocalStack;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tvf-session-'));
    stack = await startLocalStack(
      {
        PORT: '0',
        DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'),
        TABLE_NAME: `stack-session-${Date.now()}`,
        LOCAL_IDENTITIES: JSON.stringify([SESSION, DEMO_IDENTITY]),
      },
      { stackFile: join(dir, '.local/stack.json'), logger: quietLogger() },
    );
  });
  afterAll(async () => stack?.stop());

  it('gets a token, granted by the default policy, when it signs with its session token', async () => {
    const response = await signedFetch(`${stack.info.functionUrl}/token?scope=ba_demo_1`, SESSION);

    expect(response.status).toBe(200);
    expect(((await response.json()) as Record<string, unknown>).scope).toBe('ba_demo_1');
  });

  it('gets 403 Forbidden without its session token or with a wrong one', async () => {
    const url = `${stack.info.functionUrl}/token?scope=ba_demo_1`;
    const { accessKeyId, secretAccessKey } = SESSION;

    const without = await signedFetch(url, { accessKeyId, secretAccessKey });
    const wrong = await signedFetch(url, { ...SESSION, sessionToken: 'IQoJb3JpZ2luX2VjWRONG' });

    expect(without.status).toBe(403);
    expect(await without.json()).toEqual({ Message: 'Forbidden' });
    expect(wrong.status).toBe(403);
    expect(await wrong.json()).toEqual({ Message: 'Forbidden' });
  });

  it('writes a stack file that the client reads back, session token included', async () => {
    const read = await readStackFile(dir);

    expect(read).toEqual({
      functionUrl: stack.info.functionUrl,
      region: stack.info.region,
      identity: SESSION,
    });
  });

  it.skipIf(!hasCurl)(
    'prints a curl command that sends the session token, taking the secrets from the shell',
    async () => {
      const lines = tryLines(stack).join('\n');
      const command = curlCommand(stack.info);

      // Somebody's own key: neither its secret nor its session token is printed.
      expect(lines).not.toContain(SESSION.secretAccessKey);
      expect(lines).not.toContain(SESSION.sessionToken);
      expect(lines).toContain(
        `set ${SECRET_VARIABLES.secretAccessKey} and ${SECRET_VARIABLES.sessionToken}`,
      );
      const { stdout } = await run('sh', ['-c', command], {
        env: {
          ...process.env,
          [SECRET_VARIABLES.secretAccessKey]: SESSION.secretAccessKey,
          [SECRET_VARIABLES.sessionToken]: SESSION.sessionToken,
        },
      });

      expect(JSON.parse(stdout)).toMatchObject({ token_type: 'Bearer', scope: 'ba_demo_1' });
    },
  );
});

describe('the printed curl command under an ACCESS_POLICY', () => {
  const POLICY_ARN = 'arn:aws:iam::111122223333:role/reporting';
  const startWith = (grant: Record<string, unknown>) =>
    startLocalStack(
      {
        PORT: '0',
        DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'),
        TABLE_NAME: `stack-grants-${Date.now()}`,
        LOCAL_IDENTITIES: JSON.stringify([SESSION]),
        ACCESS_POLICY: JSON.stringify({
          scopes: ['ba_demo_1', 'ba_demo_2'],
          grants: [{ principal: POLICY_ARN, ...grant }],
        }),
      },
      { stackFile: null, logger: quietLogger() },
    );
  const secrets = {
    ...process.env,
    [SECRET_VARIABLES.secretAccessKey]: SESSION.secretAccessKey,
    [SECRET_VARIABLES.sessionToken]: SESSION.sessionToken,
  };

  it.skipIf(!hasCurl)('asks for a scope the first identity is granted', async () => {
    // Regression: it always asked for the first configured scope, and got 403.
    const stack = await startWith({ scopes: ['ba_demo_2'] });
    try {
      const command = tryLines(stack)[0] as string;

      const { stdout } = await run('sh', ['-c', command], { env: secrets });

      expect(JSON.parse(stdout)).toMatchObject({ token_type: 'Bearer', scope: 'ba_demo_2' });
    } finally {
      await stack.stop();
    }
  });

  it.skipIf(!hasCurl)('asks for the unscoped token when that is all it is granted', async () => {
    const stack = await startWith({ unscoped: true });
    try {
      const command = tryLines(stack)[0] as string;

      const { stdout } = await run('sh', ['-c', command], { env: secrets });

      expect(command).not.toContain('scope=');
      expect(JSON.parse(stdout)).toMatchObject({ token_type: 'Bearer' });
    } finally {
      await stack.stop();
    }
  });

  it('never prints the secret of an identity that reuses the demo key id', () => {
    const identity = {
      ...DEMO_IDENTITY,
      secretAccessKey: 'aSecretOfMyOwn0000000000000000000000000',
    };
    const info = {
      region: 'us-east-1',
      functionUrl: 'http://127.0.0.1:8787',
      scopes: ['ba_demo_1'],
      identity,
    } as unknown as StackInfo;

    const lines = tryLines({ info }).join('\n');

    expect(lines).not.toContain(identity.secretAccessKey);
    expect(lines).toContain(`$${SECRET_VARIABLES.secretAccessKey}`);
    expect(curlCommand({ ...info, identity: DEMO_IDENTITY })).toContain(
      DEMO_IDENTITY.secretAccessKey,
    );
  });

  it('says so when the first identity is granted nothing', async () => {
    const stack = await startWith({ scopes: [] });
    try {
      expect(tryLines(stack)[1]).toContain('granted nothing under ACCESS_POLICY');
    } finally {
      await stack.stop();
    }
  });
});

describe('local stack configuration', () => {
  const start = (env: Record<string, string>) =>
    startLocalStack(
      { PORT: '0', DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'), ...env },
      { stackFile: null, logger: quietLogger() },
    );
  const failure = (env: Record<string, string>) =>
    start(env).then(
      async (stack) => {
        await stack.stop();
        throw new Error('the stack started');
      },
      (error: unknown) => error as Error,
    );

  it("uses the simulator's credentials with a PROVIDER_BASE_URL but no PROVIDER_KEY", async () => {
    // Regression: it refused to start; the simulator's are the documented default.
    const sim = await startProviderSimulator();
    try {
      const stack = await start({
        PROVIDER_BASE_URL: sim.url,
        TABLE_NAME: `stack-sim-${Date.now()}`,
        ACCESS_POLICY: JSON.stringify({
          scopes: ['ba_demo_1'],
          grants: [{ principal: DEMO_ROLE_ARN, scopes: ['ba_demo_1'] }],
        }),
      });
      try {
        const response = await signedFetch(
          `${stack.info.functionUrl}/token?scope=ba_demo_1`,
          DEMO_IDENTITY,
        );

        expect(response.status).toBe(200);
        expect(sim.stats.tokenRequests).toBe(1);
      } finally {
        await stack.stop();
      }
    } finally {
      await sim.close();
    }
  });

  it('refuses to start over the stack file of a stack that is running, and replaces a stale one', async () => {
    // Regression: a second stack replaced the first one's file and sealing key,
    // and removed them when it stopped, so npm run admin lost the first stack.
    const dir = mkdtempSync(join(tmpdir(), 'tvf-two-stacks-'));
    const stackFile = join(dir, 'stack.json');
    const options = { stackFile, logger: quietLogger() };
    const env = { PORT: '0', DYNAMODB_ENDPOINT: inject('dynamodbEndpoint') };
    const first = await startLocalStack({ ...env, TABLE_NAME: `first-${Date.now()}` }, options);
    try {
      const written = readFileSync(stackFile, 'utf8');

      const second = await startLocalStack(
        { ...env, TABLE_NAME: `second-${Date.now()}` },
        options,
      ).then(
        async (stack) => {
          await stack.stop();
          throw new Error('the second stack started');
        },
        (error: unknown) => error as Error,
      );

      expect(second).toBeInstanceOf(ConfigError);
      expect(second.message).toContain(
        `Another local stack started from this directory is running at ${first.info.functionUrl}`,
      );
      expect(readFileSync(stackFile, 'utf8')).toBe(written);
    } finally {
      await first.stop();
    }
    writeFileSync(stackFile, JSON.stringify({ functionUrl: first.info.functionUrl }));
    const third = await startLocalStack({ ...env, TABLE_NAME: `third-${Date.now()}` }, options);
    await third.stop();
  });

  it('regression: a DYNAMODB_ENDPOINT where nothing answers is named, as a configuration problem', async () => {
    const error = await failure({ DYNAMODB_ENDPOINT: 'http://127.0.0.1:9' });

    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toMatch(
      /^DYNAMODB_ENDPOINT http:\/\/127\.0\.0\.1:9 did not serve table token-vending-local \(.*\); is a DynamoDB running there\?$/,
    );
  });

  it('refuses a PROVIDER_SECRET without its PROVIDER_KEY', async () => {
    const error = await failure({
      PROVIDER_BASE_URL: 'https://provider.example',
      PROVIDER_SECRET: 'provider-secret',
      ACCESS_POLICY: JSON.stringify({ scopes: ['ba_1'], grants: [] }),
    });

    expect(error.message).toContain('PROVIDER_KEY and PROVIDER_SECRET go together');
    expect(error.message).not.toContain('provider-secret');
  });

  it('refuses a PROVIDER_KEY the provider cannot be sent, naming it but never echoing it', async () => {
    const key = 'provider-key:with-a-colon';

    const error = await failure({
      PROVIDER_BASE_URL: 'https://provider.example',
      PROVIDER_KEY: key,
      PROVIDER_SECRET: 'provider-secret',
      ACCESS_POLICY: JSON.stringify({ scopes: ['ba_1'], grants: [] }),
    });

    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toContain('PROVIDER_KEY');
    expect(error.message).not.toContain(key);
    expect(error.message).not.toContain('provider-secret');
  });

  it('refuses an empty sessionToken in LOCAL_IDENTITIES', async () => {
    const error = await failure({
      LOCAL_IDENTITIES: JSON.stringify([{ ...SESSION, sessionToken: '' }]),
    });

    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toContain('LOCAL_IDENTITIES[0].sessionToken must not be empty');
    expect(error.message).not.toContain(SESSION.secretAccessKey);
  });

  it('names the entry and the field of each LOCAL_IDENTITIES problem, never a value', async () => {
    const error = await failure({
      LOCAL_IDENTITIES: JSON.stringify([
        { ...SESSION, accessKeyId: 'AKIAUSER1' },
        { ...SESSION, secretAccessKey: '' },
        { ...SESSION, arn: 'nope' },
        { ...SESSION, colour: 'blue' },
        { accessKeyId: SESSION.accessKeyId, arn: SESSION.arn },
      ]),
    });

    expect(error).toBeInstanceOf(ConfigError);
    for (const problem of [
      'LOCAL_IDENTITIES[0].accessKeyId must be 16 to 128 of A-Z 0-9',
      'LOCAL_IDENTITIES[1].secretAccessKey must not be empty',
      'LOCAL_IDENTITIES[2].arn must be an ARN',
      'LOCAL_IDENTITIES[3].colour is not a field',
      'LOCAL_IDENTITIES[4].secretAccessKey is required',
    ]) {
      expect(error.message).toContain(problem);
    }
    expect(error.message).not.toContain(SESSION.secretAccessKey);
    expect(error.message).not.toContain('AKIAUSER1');
  });

  it('refuses two LOCAL_IDENTITIES with one access key id: the second could never sign', async () => {
    // Regression: both were accepted, and requests signed with the second secret got 403.
    const error = await failure({
      LOCAL_IDENTITIES: JSON.stringify([
        SESSION,
        { ...SESSION, secretAccessKey: 'anotherSecret', arn: DEMO_SESSION_ARN },
      ]),
    });

    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toContain(
      "LOCAL_IDENTITIES[1].accessKeyId repeats LOCAL_IDENTITIES[0]'s",
    );
  });

  it('refuses, without ACCESS_POLICY, an identity the default policy cannot name', async () => {
    const error = await failure({
      LOCAL_IDENTITIES: JSON.stringify([
        { ...SESSION, arn: 'arn:aws:sts::111122223333:federated-user/alice' },
      ]),
    });

    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toContain('LOCAL_IDENTITIES[0].arn');
    expect(error.message).toContain('set ACCESS_POLICY');
  });
});

describe('npm start', () => {
  let child: ChildProcess;
  let readOutput = () => '';
  const cwd = mkdtempSync(join(tmpdir(), 'tvf-start-'));

  beforeAll(async () => {
    const started = await startNpmStart(cwd, {});
    child = started.child;
    readOutput = started.output;
  }, 60_000);

  afterAll(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });

  it('prints a curl command that gets a token, and writes .local/stack.json', async () => {
    const command = readOutput()
      .split('\n')
      .find((line) => line.trim().startsWith('curl '));
    expect(command).toBeDefined();

    const { stdout } = await run('sh', ['-c', command as string]);

    expect(JSON.parse(stdout)).toMatchObject({ token_type: 'Bearer', scope: 'ba_demo_1' });
    const info = JSON.parse(readFileSync(join(cwd, '.local/stack.json'), 'utf8'));
    expect(info.functionUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // Scripts sign with this identity's key and secret alone: no session token.
    expect(info.identity).toEqual(DEMO_IDENTITY);
    expect(command).not.toContain('x-amz-security-token');
  });

  it('stops everything when npm is gone without passing a signal on, and removes the stack file', async () => {
    // Regression: `kill <npm pid>` ended npm alone and left the stack serving.
    // 'close': every process holding the output pipe has ended.
    const closed = new Promise<void>((done) => child.once('close', () => done()));

    child.kill('SIGKILL');
    await closed;

    expect(readOutput()).toContain('npm start ended: stopping the local stack');
    expect(existsSync(join(cwd, '.local/stack.json'))).toBe(false);
  }, 15_000);
});
