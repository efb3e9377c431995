/**
 * Imports replaced when a function is bundled for Lambda, shared by the CDK
 * construct (as esbuild `--alias` flags) and by the tests and the bench that
 * bundle the functions as `cdk synth` does. Replacements are paths from the
 * project root, which is esbuild's working directory in every bundling (the
 * construct sets Docker's to where the root is mounted).
 */
export const LAMBDA_BUNDLE_ALIASES: Readonly<Record<string, string>> = {
  // The SDK's credential chain cut to the credentials Lambda provides: 110 to
  // 125 KB less to parse at every cold start (functions/bundle-aliases/lambda-credential-chain.ts).
  '@aws-sdk/credential-provider-node': './functions/bundle-aliases/lambda-credential-chain.ts',
  // AppConfig Data's two calls, for Powertools' AppConfig provider, without the
  // SDK client's REST protocol and event-stream code: 27 KB of the vend
  // function's bundle (functions/bundle-aliases/appconfigdata-client.ts).
  '@aws-sdk/client-appconfigdata': './functions/bundle-aliases/appconfigdata-client.ts',
};

/**
 * esbuild's target for every function bundle: the Node.js of the functions'
 * Lambda runtime (`RUNTIME`, infra/constructs/token-vending-function.ts; a
 * test fails when the two differ), so the tests and the bench measure the
 * bundles that ship.
 */
export const LAMBDA_ESBUILD_TARGET = 'node24';
