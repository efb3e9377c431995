/**
 * What the person running `npm run synth` (or `cdk deploy`) sees when the
 * stage or a context value is wrong: `infra/app.ts` run as the CDK CLI runs
 * it (context in CDK_CONTEXT_JSON), printing the problem alone, exit 1.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { LISTING_INDEXES_CONTEXT } from '../../infra/constructs/token-cache.js';
import { CDK_JSON_CONTEXT } from '../support/infra.js';

const ROOT = resolve(import.meta.dirname, '../..');
const outdir = mkdtempSync(join(tmpdir(), 'tvm-synth-input-'));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

/** Runs the CDK app with `context` added to cdk.json's, as `cdk synth -c` passes it. */
async function runApp(context: Record<string, unknown>) {
  try {
    await promisify(execFile)(process.execPath, ['--import', 'tsx', join(ROOT, 'infra/app.ts')], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        CDK_OUTDIR: outdir,
        CDK_CONTEXT_JSON: JSON.stringify({
          ...CDK_JSON_CONTEXT,
          'aws:cdk:bundling-stacks': [],
          ...context,
        }),
      },
      timeout: 120_000,
    });
    return { code: 0, stderr: '' };
  } catch (error) {
    const { code, stderr } = error as { code: number; stderr: string };
    return { code, stderr };
  }
}

describe('synth input errors', () => {
  it('regression: a listing index the table has not is named, with no stack trace', async () => {
    const run = await runApp({ [LISTING_INDEXES_CONTEXT]: 'tokens,token-jobs' });

    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `${LISTING_INDEXES_CONTEXT}: no listing index token-jobs (there are tokens, key-jobs)`,
    );
    expect(run.stderr).not.toMatch(/\n\s+at /);
  }, 120_000);

  it('names an unknown stage, with no stack trace', async () => {
    const run = await runApp({ stage: 'no-such-stage' });

    expect(run.code).toBe(1);
    expect(run.stderr).toContain('no-such-stage');
    expect(run.stderr).not.toMatch(/\n\s+at /);
  }, 120_000);
});
