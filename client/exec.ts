/**
 * `tvm exec -- <command>`: runs a command with a token in its environment,
 * as `aws-vault exec` runs one with AWS credentials. The token is fetched when
 * the command starts (a new `tvm exec`, a new fetch), never printed; signals
 * are passed on, and tvm exits with the command's exit code.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { isatty } from 'node:tty';
import { noPositionals, parse, parseMinTtl } from './cli-args.js';
import { CliError, UsageError } from './cli-error.js';
import type { CliIo } from './cli-io.js';
import { CREDENTIALS_HELP, TARGET_HELP, TARGET_OPTIONS, vendClientOptions } from './cli-target.js';
import { TokenVendingClient } from './token-vending-client.js';
import type { Token } from './types.js';

/** The variables `tvm exec` sets; inherited ones of these names are dropped first. */
export const EXEC_VARIABLES = {
  token: 'TOKEN_VENDING_TOKEN',
  authorization: 'TOKEN_VENDING_AUTHORIZATION',
  expiresAt: 'TOKEN_VENDING_EXPIRES_AT',
  scope: 'TOKEN_VENDING_SCOPE',
} as const;

/** Signals passed on to the command (SIGUSR1 is Node's debugger's; SIGKILL/SIGSTOP cannot be caught). */
const FORWARDED: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR2'];

/**
 * The signals a terminal's keys send (Ctrl-C, Ctrl-\) to its whole foreground
 * process group, the command included, since it runs in tvm's group. Passed on
 * again, one Ctrl-C reached the command twice, and tools that treat a second
 * interrupt as "stop now" (Terraform, for one) stopped hard. So in a terminal
 * tvm only waits for the command on them, as Doppler's `run` does (it forwards
 * signals only when no TTY is allocated, or with `--forward-signals`).
 */
const TERMINAL_SIGNALS: ReadonlySet<NodeJS.Signals> = new Set(['SIGINT', 'SIGQUIT']);

/**
 * Whether tvm leaves SIGINT and SIGQUIT to the terminal: it runs in one (any
 * of its standard streams is, checked without opening them), and is not a
 * container's PID 1, to which `docker stop`, `docker kill` and the docker
 * client of `docker run -t` without `-i` send signals alone.
 */
export function leavesTerminalSignals(pid: number, isTerminal: (fd: number) => boolean): boolean {
  return pid !== 1 && [0, 1, 2].some((fd) => isTerminal(fd));
}

export const EXEC_HELP = `Usage: tvm exec [--scope S] [--min-ttl N] [--forward-signals] [--url U] [--region R] -- <command> [args...]

Runs <command> with a token from the vend URL in its environment, fetched as it starts:
  ${EXEC_VARIABLES.token}           the bearer token
  ${EXEC_VARIABLES.authorization}   "Bearer <token>", an Authorization header's value
  ${EXEC_VARIABLES.expiresAt}      when it expires, epoch seconds
  ${EXEC_VARIABLES.scope}           the scope (unset for the unscoped token)
tvm prints no token. SIGTERM, SIGHUP and SIGUSR2 are passed on to the command, and
SIGINT and SIGQUIT too unless tvm runs in a terminal (and is not a container's PID 1),
whose Ctrl-C and Ctrl-\\ reach the command already (--forward-signals passes them on
anyway). The token is not renewed while the command runs: ask with --min-ttl for as
long as it needs (a token lives about 2 hours).

Options:
  --scope S      business application id; omit for the unscoped (partner) token
  --min-ttl N    seconds the token must still be valid when the command starts, 0..3600
                 (default 300)
  --forward-signals
                 pass SIGINT and SIGQUIT on to the command in a terminal too
${TARGET_HELP}
  -h, --help     show this help

${CREDENTIALS_HELP}

Exit codes: the command's own (128 + the signal's number when a signal ended it);
1 no token ("tvm: <code>: <title>" on stderr, the command not run); 2 usage;
126 the command cannot be run; 127 the command was not found.
`;

/** `env` with the token variables set for `token` (and stale ones of those names dropped). */
export function execEnvironment(
  env: Readonly<Record<string, string | undefined>>,
  token: Token,
): Record<string, string> {
  const child: Record<string, string> = {};
  const ours = new Set<string>(Object.values(EXEC_VARIABLES));
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && !ours.has(name)) child[name] = value;
  }
  child[EXEC_VARIABLES.token] = token.accessToken;
  child[EXEC_VARIABLES.authorization] = `${token.tokenType} ${token.accessToken}`;
  child[EXEC_VARIABLES.expiresAt] = String(token.expiresAt);
  if (token.scope !== undefined) child[EXEC_VARIABLES.scope] = token.scope;
  return child;
}

/** Runs the command with stdio inherited; resolves to the exit code tvm should exit with. */
function run(
  command: readonly string[],
  env: Record<string, string>,
  cwd: string,
  forwardAll: boolean,
): Promise<number> {
  const [file = '', ...args] = command;
  const terminal = !forwardAll && leavesTerminalSignals(process.pid, isatty);
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd, env, stdio: 'inherit' });
    // A signal tvm does not pass on is still caught: tvm waits for the command and exits as it does.
    const forward = (signal: NodeJS.Signals) => {
      if (!(terminal && TERMINAL_SIGNALS.has(signal))) child.kill(signal);
    };
    for (const signal of FORWARDED) process.on(signal, forward);
    const stopForwarding = () => {
      for (const signal of FORWARDED) process.off(signal, forward);
    };
    child.once('error', (error: NodeJS.ErrnoException) => {
      stopForwarding();
      const notFound = error.code === 'ENOENT';
      reject(
        new CliError(
          notFound ? 'not_found' : 'cannot_run',
          `${file}: ${notFound ? 'command not found' : (error.code ?? error.message)}`,
          1,
          { cause: error },
        ),
      );
    });
    child.once('exit', (code, signal) => {
      stopForwarding();
      resolve(signal ? 128 + (constants.signals[signal] ?? 0) : (code ?? 1));
    });
  });
}

export async function execCommand(args: readonly string[], io: CliIo): Promise<number> {
  const split = args.indexOf('--');
  const own = split < 0 ? args : args.slice(0, split);
  const command = split < 0 ? [] : args.slice(split + 1);
  const { values, positionals } = parse(
    own,
    {
      scope: { type: 'string' },
      'min-ttl': { type: 'string' },
      'forward-signals': { type: 'boolean' },
      ...TARGET_OPTIONS,
      help: { type: 'boolean', short: 'h' },
    },
    'exec',
  );
  if (values.help) {
    io.stdout.write(EXEC_HELP);
    return 0;
  }
  if (split < 0) {
    throw new UsageError(
      positionals.length > 0 ? 'put the command after --' : 'missing -- <command>',
      'exec',
    );
  }
  noPositionals(positionals, 'exec');
  if (command.length === 0 || command[0] === '') {
    throw new UsageError('missing the command after --', 'exec');
  }
  const minTtl = parseMinTtl(values['min-ttl'], 'exec');
  const client = new TokenVendingClient(await vendClientOptions(values, io, 'exec'));
  const token = await client.getToken({
    ...(values.scope !== undefined ? { scope: values.scope } : {}),
    ...(minTtl !== undefined ? { minTtl } : {}),
  });
  try {
    return await run(
      command,
      execEnvironment(io.env, token),
      io.cwd,
      values['forward-signals'] === true,
    );
  } catch (error) {
    if (error instanceof CliError) {
      io.stderr.write(`tvm: ${error.message}\n`);
      return error.code === 'not_found' ? 127 : 126;
    }
    throw error;
  }
}
