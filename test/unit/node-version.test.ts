/**
 * Tests, the bench and the local stack run on the Node.js the functions run
 * on in Lambda: `node@24` in devDependencies puts that Node in
 * node_modules/.bin, which npm scripts run first. This fails when the two
 * drift apart (a runtime bump in infra without the package, or a run outside
 * npm scripts on another Node).
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { expect, it } from 'vitest';
import { RUNTIME } from '../../infra/constructs/token-vending-function.js';

const ROOT = resolve(import.meta.dirname, '../..');
const major = (version: string): number => Number(/(\d+)/.exec(version)?.[1]);

it("runs on the major version of Node.js the functions' Lambda runtime has", () => {
  const lambdaMajor = major(RUNTIME.name); // nodejs24.x
  const pinned = JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')).devDependencies
    .node as string;

  expect(major(pinned)).toBe(lambdaMajor);
  expect(major(process.versions.node)).toBe(lambdaMajor);
});
