import { resolve } from 'node:path';
import { build, type Metafile } from 'esbuild';
import { LAMBDA_BUNDLE_ALIASES, LAMBDA_ESBUILD_TARGET } from '../../infra/lambda-bundling.js';

const ROOT = resolve(import.meta.dirname, '../..');

/**
 * Bundles an entry (a file, or source text resolved from the repo root) as a
 * Lambda function is bundled: the CDK NodejsFunction settings for ESM, whose
 * mainFields prefer the packages' ES module builds so unused code shakes out,
 * and the construct's target (the Lambda runtime's Node.js), which it returns.
 * `forLambda` adds the imports the construct replaces (infra/lambda-bundling.ts);
 * without it the bundle is what any Node service would get. `alias` replaces
 * further imports (paths from the repo root), for what-if bundles in the bench.
 */
export async function bundle(
  entry: { path: string } | { contents: string },
  {
    forLambda = false,
    alias = {},
  }: { forLambda?: boolean; alias?: Readonly<Record<string, string>> } = {},
): Promise<{
  bytes: number;
  inputs: string[];
  code: Uint8Array;
  metafile: Metafile;
  target: string;
}> {
  const result = await build({
    absWorkingDir: ROOT,
    alias: { ...(forLambda ? LAMBDA_BUNDLE_ALIASES : {}), ...alias },
    ...('path' in entry
      ? { entryPoints: [entry.path] }
      : { stdin: { contents: entry.contents, resolveDir: ROOT, loader: 'ts' } }),
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: LAMBDA_ESBUILD_TARGET,
    minify: true,
    mainFields: ['module', 'main'],
    metafile: true,
    write: false,
    logLevel: 'silent',
  });
  const bytes = result.outputFiles.reduce((sum, file) => sum + file.contents.length, 0);
  const code = result.outputFiles[0]?.contents ?? new Uint8Array();
  return {
    bytes,
    inputs: Object.keys(result.metafile.inputs),
    code,
    metafile: result.metafile,
    target: LAMBDA_ESBUILD_TARGET,
  };
}
