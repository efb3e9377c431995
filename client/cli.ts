/**
 * `tvm`, the command line for people: `tvm token` prints a token from the vend
 * URL, `tvm grants` what the caller is granted, `tvm exec` runs a command with
 * a token, `tvm agent` serves tokens on localhost, `tvm status` and
 * `tvm admin` run admin events (docs/operations.md). Exit codes: 0 ok, 1 error
 * (`tvm: <code>: <title>` on stderr), 2 usage; `tvm exec` exits with its
 * command's code.
 *
 * `main` takes its arguments, environment and streams as parameters so that
 * tests run it in-process; `tvm.ts` (the package's bin) calls it with the real ones.
 */
import {
  type AdminEvent,
  formatPayload,
  invokeAdminFunction,
  requireLocalStack,
  runLocalAdmin,
} from './admin.js';
import { agentCommand } from './cli-agent.js';
import { noPositionals, parse, parseMinTtl, shown } from './cli-args.js';
import { CliError, UsageError, unexpected } from './cli-error.js';
import { grantsCommand } from './cli-grants.js';
import type { CliIo } from './cli-io.js';
import { statusCommand } from './cli-status.js';
import { CREDENTIALS_HELP, TARGET_HELP, TARGET_OPTIONS, vendClientOptions } from './cli-target.js';
import { TokenVendingError } from './errors.js';
import { execCommand } from './exec.js';
import { runProjectScript } from './project-script.js';
import { STACK_FILE } from './stack-file.js';
import { TokenVendingClient } from './token-vending-client.js';
import { vendBody } from './vend-body.js';

export { AGENT_HELP } from './cli-agent.js';
export { GRANTS_HELP } from './cli-grants.js';
export type { CliIo } from './cli-io.js';
export { STATUS_HELP } from './cli-status.js';
export { EXEC_HELP } from './exec.js';

export const MAIN_HELP = `Usage: tvm <command> [options]

Commands:
  token    print a bearer token from the token vending URL
  grants   print what the vend URL grants you (which scopes, the unscoped token)
  exec     run a command with a token in its environment
  agent    serve tokens on localhost to services that do not sign (a sidecar)
  status   show what is cached, as a table (the admin status event)
  admin    run an admin event (status, invalidate, refresh, issue-keys)
  policy   check an access policy document before deploying it

Run 'tvm <command> --help' for a command's options.

Exit codes: 0 ok, 1 error ("tvm: <code>: <title>" on stderr), 2 usage;
tvm exec exits with its command's code.
`;

export const TOKEN_HELP = `Usage: tvm token [--scope S] [--min-ttl N] [--url U] [--region R] [--header]

Prints the token as JSON: {"access_token","token_type","expires_in","expires_at","scope"}
("scope" only for scoped tokens), or with --header the line "Authorization: Bearer <token>".

Options:
  --scope S      business application id; omit for the unscoped (partner) token
  --min-ttl N    seconds the token must still be valid, 0..3600 (default 300)
${TARGET_HELP}
  --header       print only "Authorization: Bearer <token>"
  -h, --help     show this help

${CREDENTIALS_HELP}

Exit codes: 0 ok, 1 error ("tvm: <code>: <title>" on stderr), 2 usage.
`;

export const ADMIN_HELP = `Usage: tvm admin '<event json>' [--function NAME] [--region R]

Runs an admin event and prints the admin function's result. Events:
  {"action":"status"}
  {"action":"invalidate","scope":"ba_123"}    {"action":"invalidate","all":true} (or {"all":true})
  {"action":"refresh","scope":"ba_123"}
  {"action":"issue-keys","businessApplicationIds":["ba_123"],"force":true}
  {"action":"clear-pending-key","businessApplicationId":"ba_123","reason":"..."}

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

async function tokenCommand(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parse(
    args,
    {
      scope: { type: 'string' },
      'min-ttl': { type: 'string' },
      ...TARGET_OPTIONS,
      header: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    'token',
  );
  if (values.help) {
    io.stdout.write(TOKEN_HELP);
    return 0;
  }
  noPositionals(positionals, 'token');
  const minTtl = parseMinTtl(values['min-ttl'], 'token');
  const client = new TokenVendingClient(await vendClientOptions(values, io, 'token'));
  const token = await client.getToken({
    ...(values.scope !== undefined ? { scope: values.scope } : {}),
    ...(minTtl !== undefined ? { minTtl } : {}),
  });
  if (values.header) {
    io.stdout.write(`Authorization: ${token.tokenType} ${token.accessToken}\n`);
    return 0;
  }
  const body = vendBody(token, (io.clock ?? { now: Date.now }).now());
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
  if (typeof event !== 'object' || event === null || Array.isArray(event)) {
    throw new UsageError('the event must be a JSON object with an "action"', 'admin');
  }
  const { action } = event as { action?: unknown };
  // The admin's short form of "invalidate everything", {"all":true}, has no action
  // (docs/operations.md): the admin function judges it, as it does every event.
  if (typeof action !== 'string' && !(action === undefined && 'all' in event)) {
    throw new UsageError('the event must be a JSON object with an "action"', 'admin');
  }
  return event as AdminEvent;
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
  await requireLocalStack(io.cwd, 'admin');
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

function report(error: unknown, io: CliIo, command: string): number {
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
    io.stderr.write(`tvm: ${error.message}\nRun 'tvm ${command} --help' for usage.\n`);
    return 2;
  }
  if (error instanceof TokenVendingError) {
    // The message is "<code>: <title>"; it never holds a token.
    io.stderr.write(`tvm: ${error.message}\n`);
    return 1;
  }
  // Not its message: an error tvm did not make may quote what it was given
  // (Node's argument errors print the value: a token, an environment).
  io.stderr.write(`tvm: internal_error: ${unexpected(error)}\n`);
  return 1;
}

/**
 * `tvm` as a process runs it: `main` over this process's streams, and a
 * stdout that cannot be written (a reader gone, `| head`; a full disk) ends
 * it with exit 1 and one line on stderr, never a stack trace.
 */
export async function run(argv: readonly string[]): Promise<number> {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    process.stderr.write(`tvm: output_failed: cannot write to stdout (${error.code ?? 'error'})\n`);
    process.exit(1);
  });
  process.stderr.on('error', () => process.exit(1));
  return main(argv);
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
  const [command, ...rest] = argv;
  try {
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
      case 'grants':
        return await grantsCommand(rest, io);
      case 'agent':
        return await agentCommand(rest, io);
      case 'exec':
        return await execCommand(rest, io);
      case 'status':
        return await statusCommand(rest, io);
      case 'admin':
        return await adminCommand(rest, io);
      case 'policy':
        return await policyCommand(rest, io);
      default:
        throw new UsageError(`unknown command '${shown(command)}'`);
    }
  } catch (error) {
    return report(error, io, command ?? '');
  }
}
