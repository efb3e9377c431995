/**
 * Where the vend function's import time goes, step by step: the bench's
 * SDK-only baseline, the same with the credential chain cut to Lambda's (as
 * every function bundle has it), one client created, all three created as the
 * function creates them, the Powertools logger and metrics added, and the
 * function itself. Each bundle built as the bench builds them; median of 20
 * fresh processes, interleaved. Run: `npx tsx bench/import-steps.ts` (not part
 * of `npm run bench`).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { bundle } from '../test/support/bundle.js';
import { BASE_ENV, medianImportTimes } from './cold-start.js';

const SDK = `import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KMSClient } from '@aws-sdk/client-kms';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';`;
// The options functions/vend-token/aws-runtime.ts creates its clients with.
const CREATED = `const fast = { maxAttempts: 2, requestHandler: { requestTimeout: 1000, connectionTimeout: 500 } };
export const clients = [new DynamoDBClient(fast), new KMSClient(fast), new SecretsManagerClient(fast)];`;
const POWERTOOLS = `import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
export const powertools = [new Logger({ serviceName: 'token-vending' }), new Metrics({ namespace: 'TokenVending', serviceName: 'vend-token' })];`;

const STEPS = [
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
    label: 'the vend function',
    entry: { path: resolve(import.meta.dirname, '../functions/vend-token/handler.ts') },
  },
];

const dir = await mkdtemp(join(tmpdir(), 'tvm-import-steps-'));
try {
  const files: string[] = [];
  for (const [i, step] of STEPS.entries()) {
    const file = join(dir, `step-${i}.mjs`);
    await writeFile(file, (await bundle(step.entry, { forLambda: step.forLambda ?? true })).code);
    files.push(file);
  }
  const medians = await medianImportTimes(files, BASE_ENV);
  const base = medians[0] ?? Number.NaN;
  console.log('| bundle | import (ms) | ratio |\n| --- | ---: | ---: |');
  for (const [i, step] of STEPS.entries()) {
    const ms = medians[i] ?? Number.NaN;
    console.log(`| ${step.label} | ${ms.toFixed(1)} | ${(ms / base).toFixed(2)} |`);
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
