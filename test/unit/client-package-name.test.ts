/**
 * The client package's name is set in one place, client/package.json, so a
 * team publishing it to its own registry under its own scope changes that one
 * line (and runs npm install, which updates package-lock.json). No code or
 * test names it: they read it from there (test/support/client-package.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { expect, it } from 'vitest';
import { CLIENT_PACKAGE_NAME } from '../support/client-package.js';

const ROOT = resolve(import.meta.dirname, '../..');
const CODE = ['client', 'bin', 'local', 'functions', 'infra', 'bench', 'test'];

/** Source files under `dir`: no builds, no dependencies. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      return ['node_modules', 'dist', 'cdk.out'].includes(entry.name) || entry.name.startsWith('.')
        ? []
        : sources(path);
    }
    return /\.(?:[cm]?[jt]s|json)$/.test(entry.name) ? [path] : [];
  });
}

it('reads the name from client/package.json', () => {
  expect(CLIENT_PACKAGE_NAME).toMatch(/^(@[a-z0-9-~][a-z0-9-._~]*\/)?[a-z0-9-~][a-z0-9-._~]*$/);
});

it('is written nowhere in code or tests but client/package.json', () => {
  const files = CODE.flatMap((dir) => sources(join(ROOT, dir)));
  expect(files.length).toBeGreaterThan(100);

  const naming = files
    .filter((file) => readFileSync(file, 'utf8').includes(CLIENT_PACKAGE_NAME))
    .map((file) => relative(ROOT, file));

  expect(naming).toEqual(['client/package.json']);
});
