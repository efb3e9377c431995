/**
 * `tvm`, the command line for people: `tvm token` prints a token from the vend
 * URL, `tvm admin` runs an admin event (docs/operations.md). Exit codes: 0 ok,
 * 1 error (`tvm: <code>: <title>` on stderr), 2 usage.
 *
 * `main` takes its arguments, environment and streams as parameters so that
 * tests run it in-process; `tvm.ts` (the package's bin) calls it with the real ones.
 */
import { parseArgs } from 'node:util';
import { type AdminEvent, invokeAdminFunction, runLocalAdmin } from './admin.js';
import { CliError, UsageError } from './cli-error.js';
import { TokenVendingError } from './errors.js';
import { runProjectScript } from './project-script.js';
import { resolveRegion } from './region.js';
import { type LocalStackFile, readStackFile, STACK_FILE, StackFileError } from './stack-file.js';
import { TokenVendingClient } from './token-vending-client.js';
import type { AwsCredentials, ClientClock, FetchFunction } from './types.js';

export interface CliIo {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown };
  /** Default: the global fetch. */
  readonly fetch?: FetchFunction;
  /** Default: real time. */
  readonly clock?: ClientClock;
}

export const MAIN_HELP = `Usage: tvm <command> [options]

Commands:
  token    print a bearer token from the token vending URL
  admin    run an admin event (status, invalidate, refresh, issue-keys)
  policy   check an access policy document before deploying it

Run 'tvm <command> --help' for a command's options.

Exit codes: 0 ok, 1 error ("tvm: <code>: <title>" on stderr), 2 usage.
`;

export const TOKEN_HELP = `Usage: tvm token [--scope S] [--min-ttl N] [--url U] [--region R] [--header]

Prints the token as JSON: {"access_token","token_type","expires_in","expires_at","scope"}
("scope" only for scoped tokens), or with --header the line "Authorization: Bearer <token>".

Options:
  --scope S      business application id; omit for the unscoped (partner) token
  --min-ttl N    seconds the token must still be valid, 0..3600 (default 300)
  --url U        vend URL (default: $TVM_URL, then functionUrl in ./${STACK_FILE});
                 https: unless the host is loopback (localhost, 127.0.0.0/8, [::1])
  --region R     SigV4 region (default: the Function URL's own region, then $AWS_REGION,
                 then the stack file's region or us-east-1 for a loopback URL)
  --header       print only "Authorization: Bearer <token>"
  -h, --help     show this help

Credentials: when AWS_ACCESS_KEY_ID is set, the AWS_* environment variables sign the request.
Otherwise a request to the local stack (the URL is ./${STACK_FILE}'s functionUrl) is signed
with the stack's identity (and its session token, if it has one), and any other URL with the
AWS default credential chain (profile, SSO, ECS, EC2, web identity).

Exit codes: 0 ok, 1 error ("tvm: <code>: <title>" on stderr), 2 usage.
`;

export const ADMIN_HELP = `Usage: tvm admin '<event json>' [--function NAME] [--region R]

Runs an admin event and prints the admin function's result. Events:
  {"action":"status"}
  {"action":"invalidate","scope":"ba_123"}    {"action":"invalidate","all":true}
  {"action":"refresh","scope":"ba_123"}
  {"action":"issue-keys","businessApplicationIds":["ba_123"],"force":true}

Options:
  --function NAME  invoke this admin function (name or ARN) in AWS with Lambda Invoke,
                   using the AWS default credential chain; a function error exits 1
                   (needs the package @aws-sdk/client-lambda installed next to tvm)
  --region R       region of the function (default: $AWS_REGION, then the AWS profile's)
  -h, --help       show this help

Without --function the event runs against the local stack that npm start runs in this
directory (./${STACK_FILE}): tvm runs 'npm run --silent admin -- <event json>' here and
passes its output and exit code through (errors as "admin: <code>: <message>"; a failed
issue-keys run prints its result on stdout as well).

Exit codes: 0 ok, 1 error ("tvm: <code>: <title>" on stderr), 2 usage.
`;

export const POLICY_HELP = `Usage: tvm policy validate <file>

Checks an access policy document (scopes, grants, keyIssuing) with the
functions' own check, the one AppConfig's validator runs before a version can
deploy, and prints a summary or every problem. Runs the project's
'npm run --silent policy -- validate <file>' in this directory (the token
vending project, as tvm admin does for the local stack).

Exit codes: 0 ok, 1 error (invalid or unreadable), 2 usage.
`;

function parse<T extends NonNullable<Parameters<typeof parseArgs>[0]>['options']>(
  args: readonly string[],
  options: T,
  command: string,
) {
  try {
    return parseArgs({ args: [...args], options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error), command);
  }
}

/** An argument shown in a message: one line, at most 40 characters. */
function shown(value: string): string {
  const line = value.replace(/\s+/g, ' ');
  return line.length > 40 ? `${line.slice(0, 39)}…` : line;
}

function parseMinTtl(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,4}$/.test(value) || Number(value) > 3600) {
    throw new UsageError('--min-ttl must be a whole number of seconds, 0..3600', 'token');
  }
  return Number(value);
}

async function loadStack(cwd: string): Promise<LocalStackFile | undefined> {
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

async function tokenCommand(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parse(
    args,
    {
      scope: { type: 'string' },
      'min-ttl': { type: 'string' },
      url: { type: 'string' },
      region: { type: 'string' },
      header: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    'token',
  );
  if (values.help) {
    io.stdout.write(TOKEN_HELP);
    return 0;
  }
  if (positionals[0] !== undefined) {
    throw new UsageError(`unexpected argument '${shown(positionals[0])}'`, 'token');
  }
  const minTtl = parseMinTtl(values['min-ttl']);
  const given = values.url || io.env.TVM_URL;
  // With a URL given, the stack file only tells whether it is the local stack:
  // a broken or stale file must not stop a call to another URL.
  const stack = given ? await loadStack(io.cwd).catch(() => undefined) : await loadStack(io.cwd);
  const url = given || stack?.functionUrl;
  if (!url) {
    throw new UsageError(
      `no vend URL: pass --url, set TVM_URL, or start the local stack (npm start) so that ./${STACK_FILE} exists`,
      'token',
    );
  }
  let parsedUrl: URL;
  try {
    parsedUrl = new URL(url);
  } catch {
    throw new UsageError(`not a URL: '${shown(url)}'`, 'token');
  }
  const local = stack !== undefined && sameOrigin(url, stack.functionUrl) ? stack : undefined;
  const credentials = environmentCredentials(io.env) ?? (local && stackCredentials(local));
  const region = values.region || local?.region || resolveRegion(parsedUrl, io.env);
  const client = new TokenVendingClient({
    url,
    ...(region ? { region } : {}),
    ...(credentials ? { credentials } : {}),
    ...(io.fetch ? { fetch: io.fetch } : {}),
    ...(io.clock ? { clock: io.clock } : {}),
  });
  const token = await client.getToken({
    ...(values.scope !== undefined ? { scope: values.scope } : {}),
    ...(minTtl !== undefined ? { minTtl } : {}),
  });
  if (values.header) {
    io.stdout.write(`Authorization: ${token.tokenType} ${token.accessToken}\n`);
    return 0;
  }
  const now = (io.clock ?? { now: Date.now }).now();
  const body = {
    access_token: token.accessToken,
    token_type: token.tokenType,
    expires_in: Math.max(0, Math.floor(token.expiresAt - now / 1000)),
    expires_at: token.expiresAt,
    ...(token.scope !== undefined ? { scope: token.scope } : {}),
  };
  io.stdout.write(`${JSON.stringify(body)}\n`);
  return 0;
}

function parseEvent(text: string): AdminEvent {
  let event: unknown;
  try {
    event = JSON.parse(text);
  } catch {
    throw new UsageError('the event is not valid JSON', 'admin');
  }
  if (
    typeof event !== 'object' ||
    event === null ||
    Array.isArray(event) ||
    typeof (event as { action?: unknown }).action !== 'string'
  ) {
    throw new UsageError('the event must be a JSON object with an "action"', 'admin');
  }
  return event as AdminEvent;
}

/** JSON payloads pretty-printed; anything else as it came. */
function formatPayload(payload: string): string {
  try {
    return `${JSON.stringify(JSON.parse(payload), null, 2)}\n`;
  } catch {
    return payload === '' || payload.endsWith('\n') ? payload : `${payload}\n`;
  }
}

async function adminCommand(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parse(
    args,
    {
      function: { type: 'string' },
      region: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    'admin',
  );
  if (values.help) {
    io.stdout.write(ADMIN_HELP);
    return 0;
  }
  const [eventText, extra] = positionals;
  if (eventText === undefined) throw new UsageError('missing the event JSON', 'admin');
  if (extra !== undefined) {
    throw new UsageError(`unexpected argument '${shown(extra)}'`, 'admin');
  }
  const event = parseEvent(eventText);
  if (values.function) {
    const region = values.region || io.env.AWS_REGION;
    const payload = await invokeAdminFunction({
      functionName: values.function,
      event,
      ...(region ? { region } : {}),
    });
    io.stdout.write(formatPayload(payload));
    return 0;
  }
  if (!(await loadStack(io.cwd))) {
    throw new UsageError(
      `no admin target: pass --function NAME, or start the local stack (npm start) so that ./${STACK_FILE} exists`,
      'admin',
    );
  }
  return runLocalAdmin({ cwd: io.cwd, env: io.env, event, stdout: io.stdout, stderr: io.stderr });
}

async function policyCommand(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parse(args, { help: { type: 'boolean', short: 'h' } }, 'policy');
  if (values.help) {
    io.stdout.write(POLICY_HELP);
    return 0;
  }
  const [action, file, extra] = positionals;
  if (action !== 'validate') {
    throw new UsageError(
      action === undefined ? 'missing the action (validate)' : `unknown action '${shown(action)}'`,
      'policy',
    );
  }
  if (file === undefined) throw new UsageError('missing the policy file', 'policy');
  if (extra !== undefined) throw new UsageError(`unexpected argument '${shown(extra)}'`, 'policy');
  return runProjectScript({
    cwd: io.cwd,
    env: io.env,
    script: 'policy',
    args: ['validate', file],
    hint: 'run tvm policy in the token vending project directory',
    stdout: io.stdout,
    stderr: io.stderr,
  });
}

function report(error: unknown, io: CliIo): number {
  if (error instanceof UsageError) {
    const help = error.command ? `tvm ${error.command} --help` : 'tvm --help';
    io.stderr.write(`tvm: ${error.message}\nRun '${help}' for usage.\n`);
    return 2;
  }
  if (error instanceof CliError) {
    io.stderr.write(`tvm: ${error.message}\n`);
    return error.exitCode;
  }
  if (
    error instanceof TokenVendingError &&
    error.status === 0 &&
    (error.code === 'invalid_config' || error.code === 'invalid_request')
  ) {
    // Rejected before any request was sent: the command line is at fault.
    io.stderr.write(`tvm: ${error.message}\nRun 'tvm token --help' for usage.\n`);
    return 2;
  }
  if (error instanceof TokenVendingError) {
    // The message is "<code>: <title>"; it never holds a token.
    io.stderr.write(`tvm: ${error.message}\n`);
    return 1;
  }
  const message = error instanceof Error ? error.message : String(error);
  io.stderr.write(`tvm: internal_error: ${message}\n`);
  return 1;
}

/** Runs one `tvm` command line; resolves to the exit code. Never throws. */
export async function main(
  argv: readonly string[],
  io: CliIo = {
    env: process.env,
    cwd: process.cwd(),
    stdout: process.stdout,
    stderr: process.stderr,
  },
): Promise<number> {
  try {
    const [command, ...rest] = argv;
    switch (command) {
      case undefined:
        throw new UsageError('missing command');
      case '-h':
      case '--help':
      case 'help':
        io.stdout.write(MAIN_HELP);
        return 0;
      case 'token':
        return await tokenCommand(rest, io);
      case 'admin':
        return await adminCommand(rest, io);
      case 'policy':
        return await policyCommand(rest, io);
      default:
        throw new UsageError(`unknown command '${shown(command)}'`);
    }
  } catch (error) {
    return report(error, io);
  }
}
