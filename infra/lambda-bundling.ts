/**
 * Imports replaced when a function is bundled for Lambda, shared by the CDK
 * construct (as esbuild `--alias` flags) and by the tests and the bench that
 * bundle the functions as `cdk synth` does. Replacements are paths from the
 * project root, where the local esbuild runs.
 */
export const LAMBDA_BUNDLE_ALIASES: Readonly<Record<string, string>> = {
  // The SDK's credential chain cut to the credentials Lambda provides: 135 KB
  // less to parse at every cold start (functions/adapters/lambda-credential-chain.ts).
  '@aws-sdk/credential-provider-node': './functions/adapters/lambda-credential-chain.ts',
};
