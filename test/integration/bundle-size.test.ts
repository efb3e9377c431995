import { resolve } from 'node:path';
import { expect, it } from 'vitest';
import { bundle } from '../support/bundle.js';

const ROOT = resolve(import.meta.dirname, '../..');
/**
 * The vend function's budget: esbuild, ESM, minified, AWS SDK included. Every
 * byte is parsed at each cold start; admin, refresh and key-issuing code never
 * belongs in it.
 */
const BUDGET_BYTES = 350 * 1024;

it('bundles the vend function, SDK included, under 350 KB', async () => {
  const { bytes } = await bundle(
    { path: resolve(ROOT, 'functions/vend-token/handler.ts') },
    { forLambda: true },
  );

  expect(bytes).toBeLessThan(BUDGET_BYTES);
});
