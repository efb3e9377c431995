/**
 * Builds the client package (client/build.mjs: tsc into client/dist) once per
 * test run, before any test file starts, so that the tests running the built
 * `tvm` and the packed tarball test what is shipped, not an earlier build.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';

const BUILD = resolve(import.meta.dirname, '../../client/build.mjs');

export default async function setup(): Promise<void> {
  try {
    await promisify(execFile)(process.execPath, [BUILD], { timeout: 120_000 });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`client build failed (node client/build.mjs):\n${stdout}${stderr}`, {
      cause: error,
    });
  }
}
