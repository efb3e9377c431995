import { resolve } from 'node:path';
import { expect, it } from 'vitest';
import { RUNTIME } from '../../infra/constructs/token-vending-function.js';
import { bundle } from '../support/bundle.js';

const ROOT = resolve(import.meta.dirname, '../..');
/**
 * The vend function's budget: esbuild, ESM, minified, AWS SDK included, for
 * the Lambda runtime's Node.js as the construct builds it. Every byte is
 * parsed at each cold start; admin, refresh and key-issuing code never
 * belongs in it.
 */
const BUDGET_BYTES = 350 * 1024;

it("bundles the vend function, SDK included, for the runtime's Node.js, under 350 KB", async () => {
  const { bytes, target } = await bundle(
    { path: resolve(ROOT, 'functions/vend-token/handler.ts') },
    { forLambda: true },
  );

  // What ships: the construct's target, the runtime's Node.js (nodejs24.x: node24).
  expect(target).toBe(`node${/(\d+)/.exec(RUNTIME.name)?.[1]}`);
  expect(bytes).toBeLessThan(BUDGET_BYTES);
});
