/**
 * The functions run without `--enable-source-maps` (it decodes the bundle's
 * source map at every cold start); their logger maps a logged error's stack to
 * the TypeScript sources instead, reading the map only then. Driven as Lambda
 * runs a function: the code bundled as the construct bundles it, its map
 * beside it, started by a plain `node` with no flags.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundle } from '../support/bundle.js';

/**
 * Real code failing as a function's start-up can: the configuration reader
 * refusing an empty environment, logged with a cause as the handlers log an
 * internal error. Once started it says so on stderr and logs when a line
 * arrives on stdin, so a test can change the files in between.
 */
const ENTRY = `
import { once } from 'node:events';
import { createFunctionLogger } from './functions/adapters/function-logger.ts';
import { EnvReader, readVendSettings } from './functions/core/config.ts';

const logger = createFunctionLogger();
process.stderr.write('started\\n');
await once(process.stdin, 'data');
try {
  const reader = new EnvReader({});
  readVendSettings(reader);
  reader.done();
} catch (cause) {
  logger.error('vend', { error: new Error('wrapped', { cause }) });
}
process.stdin.destroy();
`;

const STARTED = 'started\n';

interface LoggedError {
  readonly location: string;
  readonly stack: string;
  readonly cause?: LoggedError;
}

/** Starts the bundle, lets it log, and returns the error of its one log line (stderr, as Powertools writes errors). */
function runBundle(file: string, beforeLog: () => void = () => undefined): Promise<LoggedError> {
  const child = spawn(process.execPath, [file], {
    env: { PATH: process.env.PATH ?? '', AWS_REGION: 'us-east-1' },
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => {
    err += chunk.toString();
    if (err === STARTED) {
      beforeLog();
      child.stdin.write('go\n');
    }
  });
  return new Promise((done, fail) => {
    child.once('error', fail);
    child.once('exit', (code) => {
      try {
        if (code !== 0) throw new Error(`exit ${code}: ${err.slice(0, 500)}`);
        const line = JSON.parse(err.slice(STARTED.length)) as { level: string; error: LoggedError };
        expect(line.level).toBe('ERROR');
        done(line.error);
      } catch (error) {
        fail(error);
      }
    });
  });
}

describe('stack traces of the bundled functions', () => {
  let dir: string;
  let file: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tvm-stacks-'));
    file = join(dir, 'index.mjs');
    await bundle({ contents: ENTRY }, { forLambda: true, outfile: file });
  }, 60_000);

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('point a logged error and its cause at the TypeScript sources, without --enable-source-maps', async () => {
    const error = await runBundle(file);

    // A function the minifier renamed is named as its caller's source names it.
    expect(error.cause?.stack).toMatch(
      /\n {4}at readVendSettings \(functions\/core\/config\.ts:\d+:\d+\)\n/,
    );
    expect(error.cause?.location).toMatch(/^functions\/core\/config\.ts:\d+$/);
    expect(error.cause?.stack).toMatch(/\n {4}at .+ \(functions\/core\/config\.ts:\d+:\d+\)\n/);
    // No frame of the project's code is left at the minified bundle.
    expect(error.stack).not.toContain('index.mjs:');
    expect(error.cause?.stack).not.toContain('index.mjs:');
  }, 30_000);

  it('read the source map when an error is logged, not when the function starts', async () => {
    const again = join(dir, 'late.mjs');
    await bundle({ contents: ENTRY }, { forLambda: true, outfile: again });

    // The map goes after the start: a map read at the start would still map the stack.
    const error = await runBundle(again, () => rmSync(`${again}.map`));

    expect(error.cause?.stack).toMatch(/late\.mjs:\d+:\d+\)/);
    expect(error.cause?.stack).not.toContain('functions/core/config.ts');
  }, 60_000);
});
