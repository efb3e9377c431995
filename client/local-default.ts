/**
 * The library's local default: a client given neither a URL nor credentials
 * uses the local stack that `npm start` runs in the working directory, as
 * `tvm` does, so that a first script against `npm start` needs no setup.
 *
 * Safety: a URL or credentials given always win, and the file is then never
 * read (it could be stale, or planted); `localStack: false` turns the default
 * off; the file's URL must be a loopback one, since it is signed for with the
 * file's identity.
 */
import { isLoopback } from './region.js';
import { readStackFileSync, STACK_FILE, StackFileError } from './stack-file.js';
import type { AwsCredentials, TokenVendingClientOptions } from './types.js';

export interface LocalTarget {
  readonly url: string;
  readonly region: string;
  readonly credentials: AwsCredentials;
}

/**
 * The local stack to use, a problem to report as `invalid_config`, or
 * undefined when the options name their own target.
 */
export function localStackTarget(
  options: TokenVendingClientOptions,
  cwd: string,
): LocalTarget | { readonly problem: string } | undefined {
  if (options.url !== undefined) {
    return options.localStack === true
      ? { problem: 'localStack: true and url exclude each other' }
      : undefined;
  }
  if (options.credentials !== undefined) {
    return {
      problem: 'url is required with credentials (the local stack is used only without both)',
    };
  }
  if (options.localStack === false) return { problem: 'url is required' };
  let stack: ReturnType<typeof readStackFileSync>;
  try {
    stack = readStackFileSync(cwd);
  } catch (error) {
    if (error instanceof StackFileError) return { problem: `url not given, and ${error.message}` };
    throw error;
  }
  if (!stack) {
    return {
      problem: `url is required: pass url, or run where npm start wrote ${STACK_FILE} (not found in ${cwd})`,
    };
  }
  let url: URL;
  try {
    url = new URL(stack.functionUrl);
  } catch {
    return { problem: `url not given, and ${STACK_FILE} has a functionUrl that is not a URL` };
  }
  if (!isLoopback(url)) {
    return {
      problem: `url not given, and ${STACK_FILE}'s functionUrl is not on loopback: not used`,
    };
  }
  const { accessKeyId, secretAccessKey, sessionToken } = stack.identity;
  return {
    url: stack.functionUrl,
    region: stack.region,
    credentials: {
      accessKeyId,
      secretAccessKey,
      ...(sessionToken !== undefined ? { sessionToken } : {}),
    },
  };
}
