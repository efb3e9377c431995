import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
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
 * `outfile` also writes the bundle there, with its source map beside it as the
 * construct ships it (linked, without the sources).
 */
export async function bundle(
  entry: { path: string } | { contents: string },
  {
    forLambda = false,
    alias = {},
    outfile,
  }: { forLambda?: boolean; alias?: Readonly<Record<string, string>>; outfile?: string } = {},
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
    ...(outfile ? { outfile, sourcemap: 'linked' as const, sourcesContent: false } : {}),
    write: false,
    logLevel: 'silent',
  });
  for (const file of outfile ? result.outputFiles : []) {
    await mkdir(dirname(file.path), { recursive: true });
    await writeFile(file.path, file.contents);
  }
  const code = result.outputFiles.find((file) => !file.path.endsWith('.map'))?.contents;
  const bytes = code?.length ?? 0;
  return {
    bytes,
    inputs: Object.keys(result.metafile.inputs),
    code: code ?? new Uint8Array(),
    metafile: result.metafile,
    target: LAMBDA_ESBUILD_TARGET,
  };
}
