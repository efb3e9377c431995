/**
 * Which vend URL a `tvm` command calls, signing as whom, in which region: the
 * same rules for every command that calls it (token, grants, exec, agent).
 *
 * URL: `--url`, else `TVM_URL`, else the local stack's `functionUrl` from
 * `./.local/stack.json`. Credentials: the `AWS_*` variables when
 * `AWS_ACCESS_KEY_ID` is set; else, for the local stack's URL, the stack
 * file's identity; else the AWS default chain (left to the library).
 */
import { shown } from './cli-args.js';
import { CliError, UsageError } from './cli-error.js';
import type { CliIo } from './cli-io.js';
import { resolveRegion } from './region.js';
import { type LocalStackFile, readStackFile, STACK_FILE, StackFileError } from './stack-file.js';
import type { AwsCredentials, TokenVendingClientOptions } from './types.js';

/** The options every command that calls the vend URL takes. */
export const TARGET_OPTIONS = {
  url: { type: 'string' },
  region: { type: 'string' },
} as const;

export const TARGET_HELP = `  --url U        vend URL (default: $TVM_URL, then functionUrl in ./${STACK_FILE});
                 https: unless the host is loopback (localhost, 127.0.0.0/8, [::1])
  --region R     SigV4 region (default: the stack file's region for the local stack's
                 URL, else the Function URL's own region, then $AWS_REGION, then
                 us-east-1 for a loopback URL)`;

export const CREDENTIALS_HELP = `Credentials: when AWS_ACCESS_KEY_ID is set, the AWS_* environment variables sign the request.
Otherwise a request to the local stack (the URL is ./${STACK_FILE}'s functionUrl) is signed
with the stack's identity (and its session token, if it has one), and any other URL with the
AWS default credential chain (profile, SSO, ECS, EC2, web identity).`;

export async function loadStack(cwd: string): Promise<LocalStackFile | undefined> {
  try {
    return await readStackFile(cwd);
  } catch (error) {
    if (error instanceof StackFileError) throw new CliError('invalid_stack_file', error.message);
    throw error;
  }
}

function sameOrigin(a: string, b: string): boolean {
  try {
    return new URL(a).origin === new URL(b).origin;
  } catch {
    return false;
  }
}

/** AWS_ACCESS_KEY_ID and friends; unlike the SDK chain, they win even when AWS_PROFILE is set. */
function environmentCredentials(env: CliIo['env']): AwsCredentials | undefined {
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  if (!accessKeyId) return undefined;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  if (!secretAccessKey) {
    throw new CliError(
      'credentials_unavailable',
      'AWS_ACCESS_KEY_ID is set without AWS_SECRET_ACCESS_KEY',
    );
  }
  const sessionToken = env.AWS_SESSION_TOKEN;
  return { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
}

/** The stack identity's key, secret and (temporary credentials) session token. */
function stackCredentials(stack: LocalStackFile): AwsCredentials {
  const { accessKeyId, secretAccessKey, sessionToken } = stack.identity;
  return { accessKeyId, secretAccessKey, ...(sessionToken !== undefined ? { sessionToken } : {}) };
}

/**
 * The TokenVendingClient options for a command's `--url` and `--region`.
 * @throws UsageError without a URL; CliError on an unreadable stack file or half-set AWS_* variables.
 */
export async function vendClientOptions(
  values: { readonly url?: string | undefined; readonly region?: string | undefined },
  io: CliIo,
  command: string,
): Promise<TokenVendingClientOptions & { readonly url: string }> {
  const given = values.url || io.env.TVM_URL;
  // With a URL given, the stack file only tells whether it is the local stack:
  // a broken or stale file must not stop a call to another URL.
  const stack = given ? await loadStack(io.cwd).catch(() => undefined) : await loadStack(io.cwd);
  const url = given || stack?.functionUrl;
  if (!url) {
    throw new UsageError(
      `no vend URL: pass --url, set TVM_URL, or start the local stack (npm start) so that ./${STACK_FILE} exists`,
      command,
    );
  }
  let parsedUrl: URL;
  try {
    parsedUrl = new URL(url);
  } catch {
    throw new UsageError(`not a URL: '${shown(url)}'`, command);
  }
  const local = stack !== undefined && sameOrigin(url, stack.functionUrl) ? stack : undefined;
  const credentials = environmentCredentials(io.env) ?? (local && stackCredentials(local));
  const region = values.region || local?.region || resolveRegion(parsedUrl, io.env);
  return {
    url,
    ...(region ? { region } : {}),
    ...(credentials ? { credentials } : {}),
    ...(io.fetch ? { fetch: io.fetch } : {}),
    ...(io.clock ? { clock: io.clock } : {}),
  };
}
