/**
 * Where the vend function's import time goes, step by step: the bench's
 * SDK-only baseline, the same with the credential chain cut to Lambda's (as
 * every function bundle has it), one client created, all three created as the
 * function creates them, the Powertools logger and metrics added, the rest of
 * the function's code loaded but not started (what compiling and evaluating
 * it costs), and the function itself (what its start-up runs). Each bundle
 * built as the bench builds them; median of 20 fresh processes (or `--runs N`),
 * interleaved. Run: `npx tsx bench/import-steps.ts [--runs N]` (not part of
 * `npm run bench`). On a loaded machine, 20 runs move a step by a few
 * milliseconds from one run to the next: take more, and repeat.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { bundle } from '../test/support/bundle.js';
import { BASE_ENV, medianImportTimes } from './cold-start.js';

const AWS_RUNTIME = resolve(import.meta.dirname, '../functions/vend-token/aws-runtime.ts');
const CLIENT_OPTIONS = resolve(import.meta.dirname, '../functions/adapters/aws-client-options.ts');
const SDK = `import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KMSClient } from '@aws-sdk/client-kms';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';`;
// The options functions/vend-token/aws-runtime.ts creates its clients with.
const CREATED = `import { boundedCalls } from ${JSON.stringify(CLIENT_OPTIONS)};
const fast = boundedCalls({ requestTimeoutMs: 1000, maxAttempts: 2 });
export const clients = [new DynamoDBClient(fast), new KMSClient(fast), new SecretsManagerClient(boundedCalls({ requestTimeoutMs: 2000, maxAttempts: 2 }))];`;
const POWERTOOLS = `import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
export const powertools = [new Logger({ serviceName: 'token-vending' }), new Metrics({ namespace: 'TokenVending', serviceName: 'vend-token' })];`;

const VEND = resolve(import.meta.dirname, '../functions/vend-token/handler.ts');

interface Step {
  readonly label: string;
  readonly entry: { path: string } | { contents: string };
  /** Bundled as for Lambda (the cut credential chain); default true. */
  readonly forLambda?: boolean;
  readonly alias?: Readonly<Record<string, string>>;
}

const STEPS: readonly Step[] = [
  {
    label: 'the three SDK clients, imported (the bench baseline)',
    entry: { contents: `${SDK}\nexport { DynamoDBClient, KMSClient, SecretsManagerClient };` },
    forLambda: false,
  },
  {
    label: "... with the credential chain cut to Lambda's",
    entry: { contents: `${SDK}\nexport { DynamoDBClient, KMSClient, SecretsManagerClient };` },
  },
  {
    label: '... and one of them (DynamoDB) created',
    entry: { contents: `${SDK}\nexport const client = new DynamoDBClient({ maxAttempts: 2 });` },
  },
  {
    label: '... and all three created, as the function creates them',
    entry: { contents: `${SDK}\n${CREATED}` },
  },
  {
    label: '... and the Powertools logger and metrics created',
    entry: { contents: `${SDK}\n${POWERTOOLS}\n${CREATED}` },
  },
  {
    label: "... and the rest of the function's code loaded, not started",
    entry: {
      contents: `${SDK}\n${POWERTOOLS}\n${CREATED}\nexport { createAwsRuntime } from ${JSON.stringify(AWS_RUNTIME)};`,
    },
  },
  {
    label: 'the vend function',
    entry: { path: VEND },
  },
  {
    label: '... with logging and metrics that do nothing (no Powertools)',
    entry: { path: VEND },
    alias: {
      '@aws-lambda-powertools/logger': './bench/silent-powertools.ts',
      '@aws-lambda-powertools/metrics': './bench/silent-powertools.ts',
    },
  },
];

const dir = await mkdtemp(join(tmpdir(), 'tvm-import-steps-'));
try {
  const files: string[] = [];
  const sizes: number[] = [];
  for (const [i, step] of STEPS.entries()) {
    const file = join(dir, `step-${i}.mjs`);
    const built = await bundle(step.entry, {
      forLambda: step.forLambda ?? true,
      ...(step.alias ? { alias: step.alias } : {}),
    });
    await writeFile(file, built.code);
    files.push(file);
    sizes.push(built.bytes);
  }
  const runsFlag = process.argv.indexOf('--runs');
  const runs = runsFlag === -1 ? undefined : Number(process.argv[runsFlag + 1]);
  if (runs !== undefined && !(Number.isInteger(runs) && runs > 0)) {
    throw new Error('--runs takes a whole number of runs, e.g. --runs 60');
  }
  const medians = await medianImportTimes(files, BASE_ENV, runs);
  const base = medians[0] ?? Number.NaN;
  // Like for like: against the same clients with the same cut credential chain.
  const cut = medians[1] ?? Number.NaN;
  console.log(
    '| bundle | KB | import (ms) | ratio | ratio, like for like |\n| --- | ---: | ---: | ---: | ---: |',
  );
  for (const [i, step] of STEPS.entries()) {
    const ms = medians[i] ?? Number.NaN;
    const kb = ((sizes[i] ?? Number.NaN) / 1024).toFixed(1);
    const likeForLike = i === 0 ? '' : (ms / cut).toFixed(2);
    console.log(
      `| ${step.label} | ${kb} | ${ms.toFixed(1)} | ${(ms / base).toFixed(2)} | ${likeForLike} |`,
    );
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
