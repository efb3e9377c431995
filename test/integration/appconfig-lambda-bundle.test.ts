/**
 * The access policy read as a deployed function reads it: the functions'
 * policy provider bundled as the construct bundles it (with the small AppConfig
 * Data client in place of the SDK's, infra/lambda-bundling.ts), started in a
 * fresh Node process with only what Lambda provides, against a stand-in of
 * AppConfig Data that checks every SigV4 signature.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documentDigest } from '../../functions/core/policy-source.js';
import { type AppConfigDataFake, startAppConfigDataFake } from '../support/appconfig-data-fake.js';
import { bundle } from '../support/bundle.js';

const run = promisify(execFile);

/** Loads the policy twice (the second after AppConfig answers "unchanged") and prints it. */
const ENTRY = `import { policyProviderFor } from './functions/adapters/policy-provider.ts';
import { EnvReader } from './functions/core/config.ts';
const env = new EnvReader(process.env);
const settings = env.policySettings();
env.done();
let now = Date.now();
const provider = policyProviderFor(settings, {
  logger: { info() {}, warn: report, error: report },
  clock: { now: () => now },
});
function report(message, detail) {
  console.error(JSON.stringify({ message, detail }));
}
process.on('uncaughtException', (error) => {
  console.error(error.name + ': ' + error.message);
  process.exit(1);
});
const first = await provider.current();
now += 60_000;
const second = await provider.current();
process.stdout.write(JSON.stringify({
  version: first.version,
  digest: first.digest,
  again: second.version,
  grants: first.policy.grantsOf('arn:aws:iam::111122223333:role/checkout'),
}));`;

const DOCUMENT = JSON.stringify({
  scopes: ['ba_1'],
  grants: [{ principal: 'arn:aws:iam::111122223333:role/checkout', scopes: ['ba_1'] }],
});
const CREDENTIALS = {
  accessKeyId: 'ASIALAMBDAROLE000001',
  secretAccessKey: 'lambda-role-secret',
  sessionToken: 'lambda-session',
};
const LAMBDA_ENV = {
  AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
  AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
  AWS_SESSION_TOKEN: CREDENTIALS.sessionToken,
};

describe('the access policy in a function bundled for Lambda', () => {
  let dir: string;
  let file: string;
  let inputs: string[];
  let fake: AppConfigDataFake;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tvm-appconfig-bundle-'));
    const built = await bundle({ contents: ENTRY }, { forLambda: true });
    inputs = built.inputs;
    file = join(dir, 'policy.mjs');
    await writeFile(file, built.code);
    // AppConfig's clock: each request comes 30 s after the one before, as the
    // function's clock moves between its two reads (AppConfig refuses a poll
    // sooner than the session's interval).
    let appConfigNow = Date.now();
    fake = await startAppConfigDataFake({
      identities: [CREDENTIALS],
      region: 'eu-west-1',
      now: () => {
        appConfigNow += 30_000;
        return appConfigNow;
      },
    });
  }, 60_000);

  afterAll(async () => {
    await fake?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const load = (env: Record<string, string>) =>
    run(process.execPath, [file], {
      env: {
        PATH: process.env.PATH ?? '',
        AWS_REGION: 'eu-west-1',
        AWS_ENDPOINT_URL_APPCONFIGDATA: fake.url,
        POLICY_APPCONFIG_APPLICATION: 'tv',
        POLICY_APPCONFIG_ENVIRONMENT: 'prod',
        POLICY_APPCONFIG_PROFILE: 'access-policy',
        POLICY_MAX_AGE_SECONDS: '30',
        ...env,
      },
    });

  it("carries the small client, not the SDK's AppConfig Data client", () => {
    expect(inputs).toContain('functions/bundle-aliases/appconfigdata-client.ts');
    expect(inputs.filter((input) => input.includes('@aws-sdk/client-appconfigdata/'))).toEqual([]);
  });

  it('reads the deployed policy and its version label with the credentials Lambda provides, every request signed', async () => {
    fake.deploy(DOCUMENT, 'onboard-ba_1');
    const before = { ...fake.stats };

    const { stdout } = await load(LAMBDA_ENV);

    const out = JSON.parse(stdout) as {
      version: string;
      digest: string;
      again: string;
      grants: unknown;
    };
    expect(out.version).toBe('onboard-ba_1');
    expect(out.digest).toBe(documentDigest(DOCUMENT));
    // The second read polled, AppConfig answered "unchanged", the document held.
    expect(out.again).toBe(out.version);
    expect(fake.stats.polls - before.polls).toBe(2);
    expect(fake.stats.sessions - before.sessions).toBe(1);
    // The session asked AppConfig for a poll every POLICY_MAX_AGE_SECONDS, and none was refused.
    expect(fake.stats.requestedIntervals.at(-1)).toBe(30);
    expect(fake.stats.tooEarly).toBe(before.tooEarly);
    expect(out.grants).toEqual({ scopes: ['ba_1'], unscoped: false });
    expect(fake.stats.refusedSignatures).toBe(before.refusedSignatures);
  });

  it('retries once when AppConfig answers 500, as the SDK client would', async () => {
    fake.deploy(DOCUMENT);
    fake.fail(1);

    const { stdout } = await load(LAMBDA_ENV);

    expect(JSON.parse(stdout).version).toBe(documentDigest(DOCUMENT));
  });

  it('is refused by AppConfig when signed with the wrong secret, and says so', async () => {
    fake.deploy(DOCUMENT);
    const refused = fake.stats.refusedSignatures;

    const failure = await load({ ...LAMBDA_ENV, AWS_SECRET_ACCESS_KEY: 'not-the-secret' }).then(
      () => 'loaded',
      (error: { stderr: string }) => error.stderr,
    );

    expect(fake.stats.refusedSignatures).toBeGreaterThan(refused);
    expect(failure).not.toBe('loaded');
    expect(failure).not.toContain('not-the-secret');
  });
});
