/**
 * The functions' bundles carry the SDK's credential chain cut to Lambda's
 * (infra/lambda-bundling.ts). A client bundled that way, started in a fresh
 * Node process with only what Lambda provides, still signs its calls, and the
 * sources no Lambda function runs are not in the bundle.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_LAMBDA_CREDENTIALS } from '../../functions/bundle-aliases/lambda-credential-chain.js';
import { bundle } from '../support/bundle.js';
import { startCredentialsEndpoint } from '../support/container-credentials.js';

const run = promisify(execFile);

/** Lists tables through a bundled DynamoDB client at ENDPOINT. */
const ENTRY = `import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
const client = new DynamoDBClient({ endpoint: process.env.ENDPOINT, maxAttempts: 1 });
const out = await client.send(new ListTablesCommand({}));
process.stdout.write(JSON.stringify(out.TableNames));`;

/** The sources of the SDK's full chain that a Lambda function never runs. */
const FULL_CHAIN =
  /node_modules\/@aws-sdk\/(credential-provider-(node|ini|sso|process|web-identity|login)|nested-clients|token-providers)\//;

describe('a client bundled for Lambda', () => {
  let dir: string;
  let file: string;
  let inputs: string[];
  let endpoint: Awaited<ReturnType<typeof startCredentialsEndpoint>>;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tvm-lambda-credentials-'));
    const built = await bundle({ contents: ENTRY }, { forLambda: true });
    inputs = built.inputs;
    file = join(dir, 'list-tables.mjs');
    await writeFile(file, built.code);
    endpoint = await startCredentialsEndpoint(() => ({
      AccessKeyId: 'ASIAFROMCONTAINER',
      SecretAccessKey: 'container-secret',
      Token: 'container-session',
      Expiration: new Date(Date.now() + 3_600_000).toISOString(),
    }));
  }, 60_000);

  afterAll(async () => {
    await endpoint?.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** Runs the bundle with exactly `env` (plus PATH and a region). */
  const listTables = (env: Record<string, string>) =>
    run(process.execPath, [file], {
      env: {
        PATH: process.env.PATH ?? '',
        AWS_REGION: 'us-east-1',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        ENDPOINT: endpoint.url,
        ...env,
      },
    });

  const signedWith = (): string | undefined =>
    /Credential=([^/]+)\//.exec(String(endpoint.serviceRequests.at(-1)?.authorization))?.[1];

  it('leaves out the credential sources Lambda never provides', () => {
    expect(inputs).toContain('functions/bundle-aliases/lambda-credential-chain.ts');
    expect(inputs.filter((input) => FULL_CHAIN.test(input))).toEqual([]);
  });

  it('signs with the credentials the Lambda runtime puts in the environment', async () => {
    const { stdout } = await listTables({
      AWS_ACCESS_KEY_ID: 'ASIAFROMENVIRONMENT',
      AWS_SECRET_ACCESS_KEY: 'lambda-secret',
      AWS_SESSION_TOKEN: 'lambda-session',
    });

    expect(JSON.parse(stdout)).toEqual([]);
    expect(signedWith()).toBe('ASIAFROMENVIRONMENT');
  });

  it('signs with credentials from the container endpoint when the environment has none', async () => {
    const { stdout } = await listTables({
      AWS_CONTAINER_CREDENTIALS_FULL_URI: `${endpoint.url}/credentials`,
      AWS_CONTAINER_AUTHORIZATION_TOKEN: 'container-authorization',
    });

    expect(JSON.parse(stdout)).toEqual([]);
    expect(signedWith()).toBe('ASIAFROMCONTAINER');
    expect(endpoint.serviceRequests.at(-1)?.['x-amz-security-token']).toBe('container-session');
  });

  it('fails the call with a message naming the variables when Lambda provided neither', async () => {
    const failure = await listTables({}).then(
      () => undefined,
      (error: { stderr: string }) => error.stderr,
    );

    expect(failure).toContain(NO_LAMBDA_CREDENTIALS);
  });
});

describe('the four function bundles', () => {
  const ROOT = resolve(import.meta.dirname, '../..');
  const ALIASED = '@aws-sdk/credential-provider-node';

  it.each(['vend-token', 'refresh', 'issue-keys', 'admin'])(
    'replace the SDK chain in %s only where the SDK takes its default, with one copy of the SDK core',
    async (name) => {
      const { metafile, inputs } = await bundle(
        { path: join(ROOT, 'functions', name, 'handler.ts') },
        { forLambda: true },
      );
      // Who imported the replaced package: the SDK clients' default
      // configuration, the bundles' AppConfig Data client, and in issue-keys
      // the client package's signer (fromNodeProviderChain), which in Lambda
      // should read Lambda's credentials too. Anyone else would silently lose
      // the sources cut.
      const importers = Object.entries(metafile.inputs).flatMap(([importer, input]) =>
        input.imports.some((i) => i.original?.startsWith(ALIASED)) ? [importer] : [],
      );
      const expected = (i: string) =>
        /@aws-sdk\/client-[a-z-]+\/dist-es\/runtimeConfig\.js$/.test(i) ||
        i === 'functions/bundle-aliases/appconfigdata-client.ts' ||
        /node_modules\/@aws-sdk\/credential-providers\/dist-es\/fromNodeProviderChain\.js$/.test(i);

      expect(importers.length).toBeGreaterThan(0);
      expect(importers.filter((i) => !expected(i))).toEqual([]);
      // The pinned direct dependencies must not pull in a second copy.
      expect(
        inputs.filter((i) => /node_modules\/.+\/node_modules\/@(smithy|aws-sdk)\//.test(i)),
      ).toEqual([]);
    },
    30_000,
  );
});
