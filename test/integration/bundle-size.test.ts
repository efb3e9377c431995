import { resolve } from 'node:path';
import { build } from 'esbuild';
import { expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
/** The vend function's budget: esbuild, ESM, minified, AWS SDK included. */
const BUDGET_BYTES = 450 * 1024;

it('bundles the vend function, SDK included, under 450 KB', async () => {
  // Same settings as the CDK NodejsFunction bundling: ESM output prefers the
  // packages' ES module builds (mainFields module,main) so unused code shakes out.
  const result = await build({
    entryPoints: [resolve(ROOT, 'functions/vend-token/handler.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    minify: true,
    mainFields: ['module', 'main'],
    write: false,
    logLevel: 'silent',
  });

  const bytes = result.outputFiles.reduce((sum, file) => sum + file.contents.length, 0);
  expect(bytes).toBeLessThan(BUDGET_BYTES);
});
