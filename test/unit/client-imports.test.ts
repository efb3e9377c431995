/**
 * `client/` is what callers install, as its own package: no file of it may
 * import from `functions/`, `local/` or anywhere else outside `client/`, not
 * even a type.
 */
import { readdir, readFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { expect, it } from 'vitest';

const CLIENT = resolve(import.meta.dirname, '../../client');

/** Every module specifier in a source text: static and dynamic imports, re-exports. */
function specifiers(source: string): string[] {
  const found: string[] = [];
  const patterns = [
    /\b(?:import|export)\s[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]/g,
    /\bimport\s*['"]([^'"]+)['"]/g,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
    /\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const pattern of patterns) {
    for (const match of source.matchAll(pattern)) if (match[1]) found.push(match[1]);
  }
  return found;
}

/** The package's sources: not its build (dist/, and a build's .dist-* in progress) nor node_modules. */
async function clientFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const files = await Promise.all(
    entries.map((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        const skipped = ['dist', 'node_modules'].includes(entry.name) || entry.name.startsWith('.');
        return skipped ? [] : clientFiles(path);
      }
      return /\.(?:[cm]?ts|[cm]?js)$/.test(entry.name) ? [path] : [];
    }),
  );
  return files.flat();
}

it('reads the specifiers it checks', () => {
  expect(
    specifiers(
      [
        "import type { A } from '../functions/core/errors.js';",
        "import {\n  B,\n} from './b.js';",
        "export { C } from '../local/stack.js';",
        "import './side-effect.js';",
        "const d = await import('@aws-sdk/client-lambda');",
      ].join('\n'),
    ),
  ).toEqual([
    '../functions/core/errors.js',
    './b.js',
    '../local/stack.js',
    './side-effect.js',
    '@aws-sdk/client-lambda',
  ]);
});

it('no file under client/ imports from outside client/', async () => {
  const files = await clientFiles(CLIENT);
  expect(files.length).toBeGreaterThan(10);

  const outside: string[] = [];
  for (const file of files) {
    for (const specifier of specifiers(await readFile(file, 'utf8'))) {
      if (!specifier.startsWith('.') && !specifier.startsWith('/')) continue; // a package
      const target = relative(CLIENT, resolve(dirname(file), specifier));
      if (target === '..' || target.startsWith(`..${sep}`) || isAbsolute(target)) {
        outside.push(`${relative(CLIENT, file)} imports ${specifier}`);
      }
    }
  }

  expect(outside).toEqual([]);
});

it('imports exactly the packages client/package.json declares: its dependencies and the optional Lambda client', async () => {
  const manifest = JSON.parse(await readFile(join(CLIENT, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
    peerDependencies: Record<string, string>;
  };
  const imported = new Set<string>();
  for (const file of await clientFiles(CLIENT)) {
    for (const specifier of specifiers(await readFile(file, 'utf8'))) {
      if (specifier.startsWith('.') || specifier.startsWith('node:')) continue;
      const [scope = '', name = ''] = specifier.split('/');
      imported.add(scope.startsWith('@') ? `${scope}/${name}` : scope);
    }
  }

  expect([...imported].sort()).toEqual(
    [...Object.keys(manifest.dependencies), ...Object.keys(manifest.peerDependencies)].sort(),
  );
  expect(Object.keys(manifest.peerDependencies)).toEqual(['@aws-sdk/client-lambda']);
});
