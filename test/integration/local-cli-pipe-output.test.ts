/**
 * Regression: `npm run admin` and `npm run policy` cut their output short when
 * it went through a pipe (`| jq`, `| wc`) and was over 64 KiB: they ended with
 * process.exit() while the rest was still queued. A status of a few hundred
 * key jobs came out as truncated JSON; a policy check of a large document
 * listed only its first problems. Each command runs as an operator types it,
 * under `sh`, into a real pipe.
 */
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { StackInfo } from '../../local/stack.js';
import {
  CHILD_ENV,
  type NpmStartGroup,
  npmRunAdmin,
  projectOfItsOwn,
  startNpmStartGroup,
} from '../support/npm-start.js';

let project: string;

/** `sh -c script` in the project directory: its exit code and stdout. */
function shell(
  script: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string }> {
  return new Promise((done) => {
    execFile(
      'sh',
      ['-c', script, 'sh', ...args],
      { cwd: project, env, timeout: 60_000, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout) => {
        done({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout });
      },
    );
  });
}

beforeAll(async () => {
  project = await projectOfItsOwn('tvf-pipe-output-');
  return () => rm(project, { recursive: true, force: true });
});

describe('regression: local command lines lose no output to a pipe', () => {
  it('npm run policy -- validate lists every problem of a large document through a pipe', async () => {
    const scopes = Array.from({ length: 20_000 }, (_, i) => `not a scope ${i}`);
    await writeFile(join(project, 'big.json'), JSON.stringify({ scopes, grants: [] }));

    for (let i = 0; i < 3; i++) {
      const run = await shell(
        'npm run --silent policy -- validate "$1" 2>&1 >/dev/null | wc -l',
        ['big.json'],
        CHILD_ENV,
      );

      // The heading, then one line per problem.
      expect(Number(run.stdout.trim())).toBe(1 + scopes.length);
    }
  }, 30_000);

  it('regression: npm run policy into a pipe its reader already closed exits with its code, no EPIPE trace', async () => {
    // `npm run policy -- validate p.json | true` (or `| grep -q`): the reader is
    // gone before the summary is written. The write fails (EPIPE), the stream is
    // destroyed, and its error comes a tick later: exitWhenFlushed must hear it.
    await writeFile(join(project, 'ok.json'), JSON.stringify({ scopes: ['ba_1'], grants: [] }));
    for (let i = 0; i < 2; i++) {
      const child = spawn('npm', ['run', '--silent', 'policy', '--', 'validate', 'ok.json'], {
        cwd: project,
        env: CHILD_ENV,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      // Closed before the command (tsx's start alone takes a few hundred ms) writes.
      child.stdout.destroy();
      let stderr = '';
      child.stderr.on('data', (d) => {
        stderr += String(d);
      });
      const code = await new Promise<number | null>((done) => child.once('close', done));

      expect(stderr).not.toContain('EPIPE');
      expect(code).toBe(0);
    }
  }, 30_000);

  describe('against npm start', () => {
    let stack: NpmStartGroup;
    let env: Record<string, string>;

    beforeAll(async () => {
      env = {
        ...CHILD_ENV,
        PORT: '0',
        DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'),
        TABLE_NAME: `pipe-output-${process.pid}-${Date.now()}`,
      };
      stack = await startNpmStartGroup(project, env);
      const info = JSON.parse(
        readFileSync(join(project, '.local/stack.json'), 'utf8'),
      ) as StackInfo;
      env = { ...env, PORT: new URL(info.functionUrl).port };
    }, 60_000);
    afterAll(() => stack?.kill());

    it('npm run admin status of some hundred key jobs reaches jq (here wc) whole', async () => {
      // 400 key jobs: ids the simulator does not know (404, business_application_not_found).
      for (let batch = 0; batch < 4; batch++) {
        const ids = Array.from({ length: 100 }, (_, i) => `ba_unknown_${batch}_${i}`);
        const run = await npmRunAdmin(
          project,
          { action: 'issue-keys', businessApplicationIds: ids },
          env,
        );
        expect(run.stderr).toContain('business_application_not_found');
      }
      const event = JSON.stringify({ action: 'status' });
      const whole = await shell('npm run --silent admin -- "$1" > status.json', [event], env);
      expect(whole.code).toBe(0);
      const written = readFileSync(join(project, 'status.json'), 'utf8');
      expect(JSON.parse(written).key_jobs).toHaveLength(400);
      expect(written.length).toBeGreaterThan(64 * 1024);

      for (let i = 0; i < 3; i++) {
        const piped = await shell('npm run --silent admin -- "$1" | wc -c', [event], env);
        expect(Number(piped.stdout.trim())).toBe(Buffer.byteLength(written));
      }
    }, 90_000);
  });
});
