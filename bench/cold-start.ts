/**
 * Cold start: each function bundled as CDK's NodejsFunction bundles it (with
 * the SDK's credential chain cut to Lambda's), its size, and the time a fresh
 * Node process takes to import it (median of 20), against a bundle that
 * imports only the same AWS SDK clients (the import-time target's baseline, with the SDK's
 * full credential chain), and against that bundle with the chain cut the same
 * way (like for like: what creating the clients and the function's own code cost).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { bundle } from '../test/support/bundle.js';
import { median } from './stats.js';
import { POLICY_JSON } from './world.js';

const ROOT = resolve(import.meta.dirname, '..');
export const IMPORT_RUNS = 20;

export const BASE_ENV = {
  AWS_REGION: 'us-east-1',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  TABLE_NAME: 'token-vending',
  ACCESS_POLICY: POLICY_JSON,
  PROVIDER_BASE_URL: 'https://api.provider.example',
  CREDENTIALS_SECRET_ARN: 'arn:aws:secretsmanager:us-east-1:111122223333:secret:provider-AbCdEf',
  KMS_KEY_ID: 'arn:aws:kms:us-east-1:111122223333:key/00000000-0000-0000-0000-000000000000',
};

/** The functions and the environment each needs to start. */
export const FUNCTIONS = [
  { name: 'vend', entry: 'functions/vend-token/handler.ts', env: {} },
  { name: 'refresh', entry: 'functions/refresh/handler.ts', env: {} },
  {
    name: 'issue-keys',
    entry: 'functions/issue-keys/handler.ts',
    env: { SECRETS_PREFIX: 'token-vending', VEND_URL: 'https://vend.lambda-url.us-east-1.on.aws' },
  },
  {
    name: 'admin',
    entry: 'functions/admin/handler.ts',
    env: { REFRESH_FUNCTION_NAME: 'refresh', ISSUE_KEYS_FUNCTION_NAME: 'issue-keys' },
  },
] as const;

/** The client class each SDK package exports. */
const SDK_CLIENT_CLASSES: Record<string, string> = {
  'client-dynamodb': 'DynamoDBClient',
  'client-kms': 'KMSClient',
  'client-lambda': 'LambdaClient',
  'client-secrets-manager': 'SecretsManagerClient',
};

export interface ColdStartResult {
  readonly name: string;
  readonly bytes: number;
  /** The AWS SDK clients the bundle holds, e.g. client-dynamodb. */
  readonly sdkClients: string[];
  /** The SDK-only bundle as any bundle of these clients has it: the SDK's full credential chain (the import-time target's baseline). */
  readonly sdkOnlyBytes: number;
  readonly importMs: number;
  readonly sdkOnlyImportMs: number;
  /** The same SDK-only bundle with the credential chain cut to Lambda's, as the functions have it: like for like. */
  readonly sdkOnlyLambdaBytes: number;
  readonly sdkOnlyLambdaImportMs: number;
}

/** Milliseconds a fresh `node` takes to import `file` (process start excluded). */
function importTime(file: string, env: Record<string, string>): Promise<number> {
  const script = `const t = performance.now(); await import(${JSON.stringify(pathToFileURL(file).href)}); process.stdout.write(String(performance.now() - t));`;
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.once('error', fail);
    child.once('exit', (code) => {
      const ms = Number(out);
      if (code === 0 && Number.isFinite(ms)) done(ms);
      else fail(new Error(`importing ${file} failed (exit ${code}): ${err.slice(0, 500)}`));
    });
  });
}

/**
 * Each file's median import time over `runs` fresh processes, the files
 * interleaved so that drift in the machine's load hits them all alike.
 */
export async function medianImportTimes(
  files: readonly string[],
  env: Record<string, string>,
  runs = IMPORT_RUNS,
): Promise<number[]> {
  const times: number[][] = files.map(() => []);
  for (let run = 0; run < runs; run++) {
    for (const [i, file] of files.entries()) times[i]?.push(await importTime(file, env));
  }
  return times.map(median);
}

export async function coldStart(): Promise<ColdStartResult[]> {
  const dir = await mkdtemp(join(tmpdir(), 'tvm-bench-'));
  try {
    const results: ColdStartResult[] = [];
    for (const fn of FUNCTIONS) {
      const built = await bundle({ path: join(ROOT, fn.entry) }, { forLambda: true });
      const sdkClients = [
        ...new Set(
          built.inputs
            .map((input) => /node_modules\/@aws-sdk\/(client-[a-z0-9-]+)\//.exec(input)?.[1])
            .filter((name): name is string => name !== undefined),
        ),
      ].sort();
      const sdkOnlySource = {
        contents: sdkClients
          .map((client) => `export { ${SDK_CLIENT_CLASSES[client]} } from '@aws-sdk/${client}';`)
          .join('\n'),
      };
      // Stock: the SDK's full credential chain, as any bundle of these clients has it.
      const sdkOnly = await bundle(sdkOnlySource);
      const sdkOnlyLambda = await bundle(sdkOnlySource, { forLambda: true });
      const file = join(dir, `${fn.name}.mjs`);
      const sdkFile = join(dir, `${fn.name}-sdk-only.mjs`);
      const sdkLambdaFile = join(dir, `${fn.name}-sdk-only-lambda.mjs`);
      await writeFile(file, built.code);
      await writeFile(sdkFile, sdkOnly.code);
      await writeFile(sdkLambdaFile, sdkOnlyLambda.code);
      const [
        importMs = Number.NaN,
        sdkOnlyImportMs = Number.NaN,
        sdkOnlyLambdaImportMs = Number.NaN,
      ] = await medianImportTimes([file, sdkFile, sdkLambdaFile], { ...BASE_ENV, ...fn.env });
      results.push({
        name: fn.name,
        bytes: built.bytes,
        sdkClients,
        sdkOnlyBytes: sdkOnly.bytes,
        importMs,
        sdkOnlyImportMs,
        sdkOnlyLambdaBytes: sdkOnlyLambda.bytes,
        sdkOnlyLambdaImportMs,
      });
    }
    return results;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
