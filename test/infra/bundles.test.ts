/**
 * The one synth with real bundling (the local esbuild, as `cdk deploy` runs
 * it): each function's bundle is ESM, minified, with a source map, holds the
 * AWS SDK, stays within its size budget, and starts under Node with the
 * environment the stack gives it (its configuration reader accepts it).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildStack, environmentOf, functionId, REGION } from '../support/infra.js';

const run = promisify(execFile);

/**
 * Bytes of the bundle (source map excluded). Vend's is its 350 KB budget, as
 * test/integration/bundle-size.test.ts and the bench hold it; the rest have
 * headroom.
 */
const BUDGETS = {
  'token-vending-example-vend-token': 350 * 1024,
  'token-vending-example-refresh': 500 * 1024,
  'token-vending-example-issue-keys': 500 * 1024,
  'token-vending-example-admin': 500 * 1024,
};
const FUNCTIONS = Object.keys(BUDGETS) as Array<keyof typeof BUDGETS>;

describe('bundles', () => {
  let outdir: string;
  let template: Template;
  const bundleDir = (name: string): string => {
    const fn = template.toJSON().Resources[functionId(template, name)];
    const key = fn.Properties.Code.S3Key as string;
    return join(outdir, `asset.${key.replace(/\.zip$/, '')}`);
  };

  beforeAll(() => {
    outdir = mkdtempSync(join(tmpdir(), 'token-vending-bundles-'));
    const { app, stack } = buildStack(undefined, { bundling: true, outdir });
    app.synth();
    template = Template.fromStack(stack);
  }, 180_000);

  afterAll(() => {
    rmSync(outdir, { recursive: true, force: true });
  });

  it.each(FUNCTIONS)('keeps %s within its size budget', (name) => {
    const bytes = statSync(join(bundleDir(name), 'index.mjs')).size;

    expect(bytes).toBeLessThan(BUDGETS[name]);
  });

  it.each(FUNCTIONS)('bundles %s as minified ESM with the AWS SDK and a source map', (name) => {
    const code = readFileSync(join(bundleDir(name), 'index.mjs'), 'utf8');
    const map = JSON.parse(readFileSync(join(bundleDir(name), 'index.mjs.map'), 'utf8')) as {
      sources: string[];
      sourcesContent?: unknown;
    };

    expect(code).toMatch(/export\s*\{/);
    // No CommonJS require shim that would fail in an ES module.
    expect(code).not.toContain('Dynamic require of');
    // Minified: thousands of characters a line (unminified code averages under 40).
    expect(code.length / code.split('\n').length).toBeGreaterThan(1000);
    expect(code.trimEnd().endsWith('//# sourceMappingURL=index.mjs.map')).toBe(true);
    expect(map.sourcesContent).toBeUndefined();
    expect(map.sources.some((s) => s.includes('node_modules/@aws-sdk/client-'))).toBe(true);
    expect(
      map.sources.some((s) => s.endsWith(`functions/${name.split('-example-')[1]}/handler.ts`)),
    ).toBe(true);
  });

  it.each(FUNCTIONS)(
    'starts %s under Node with the environment the stack gives it',
    async (name) => {
      const entry = join(bundleDir(name), 'index.mjs');
      const env = {
        PATH: process.env.PATH ?? '',
        AWS_REGION: REGION,
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        ...environmentOf(template, name),
      };

      const { stdout } = await run(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `const m = await import(${JSON.stringify(`file://${entry}`)}); console.log(typeof m.handler);`,
        ],
        { env, timeout: 30_000 },
      );

      expect(stdout.trim()).toBe('function');
    },
  );

  it.each(FUNCTIONS)('cuts the AWS SDK credential chain in %s to what Lambda provides', (name) => {
    const { sources } = JSON.parse(
      readFileSync(join(bundleDir(name), 'index.mjs.map'), 'utf8'),
    ) as { sources: string[] };

    expect(
      sources.some((s) => s.endsWith('functions/bundle-aliases/lambda-credential-chain.ts')),
    ).toBe(true);
    expect(
      sources.filter((s) =>
        /node_modules\/@aws-sdk\/(credential-provider-(node|ini|sso)|nested-clients)\//.test(s),
      ),
    ).toEqual([]);
  });

  it('writes nothing but the bundle and its map into each asset', () => {
    for (const name of FUNCTIONS) {
      expect(readdirSync(bundleDir(name)).sort()).toEqual(['index.mjs', 'index.mjs.map']);
    }
  });
});
