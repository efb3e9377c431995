#!/usr/bin/env node
/**
 * `npm run build`: compiles the package with tsc (tsconfig.json) into dist/.
 *
 * tsc writes into a fresh sibling directory that then replaces dist/ in two
 * renames, so that dist/ never holds files of deleted modules and a `tvm` or a
 * test reading dist/ while a build runs sees the old build or the new one,
 * never half of one.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const here = import.meta.dirname;
const dist = join(here, 'dist');
const next = join(here, `.dist-${process.pid}`);
const old = join(here, `.dist-old-${process.pid}`);

/** tsc from the workspace root's devDependencies. */
function findTsc() {
  try {
    const typescript = createRequire(import.meta.url).resolve('typescript/package.json');
    return join(dirname(typescript), 'bin/tsc');
  } catch {
    console.error('client build: typescript is not installed (installed with --omit=dev?)');
    process.exit(1);
  }
}

const tsconfig = join(here, 'tsconfig.json');
const result = spawnSync(process.execPath, [findTsc(), '-p', tsconfig, '--outDir', next], {
  stdio: 'inherit',
});
if (result.status !== 0) {
  rmSync(next, { recursive: true, force: true });
  console.error('client build failed: tsc reported errors (dist/ left as it was)');
  process.exit(result.status ?? 1);
}
// npm sets this on install; in this repository node_modules/.bin/tvm links here directly.
chmodSync(join(next, 'tvm.js'), 0o755);

// Another build may swap in between (two test runs starting at once): try again.
for (let attempt = 1; ; attempt++) {
  try {
    if (existsSync(dist)) renameSync(dist, old);
    renameSync(next, dist);
    break;
  } catch (error) {
    if (attempt === 5 || !['ENOENT', 'ENOTEMPTY', 'EEXIST'].includes(error.code)) throw error;
  } finally {
    rmSync(old, { recursive: true, force: true });
  }
}
