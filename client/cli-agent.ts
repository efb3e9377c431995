/** `tvm agent`: the localhost token endpoint (agent.ts) as a command, with its token file and signals. */
import { resolve } from 'node:path';
import { AGENT_HOST, AGENT_TOKEN_HEADER, DEFAULT_AGENT_PORT, startAgent } from './agent.js';
import {
  agentTokenFromEnv,
  MIN_AGENT_TOKEN_LENGTH,
  newAgentToken,
  removeAgentTokenFile,
  writeAgentTokenFile,
} from './agent-token.js';
import { noPositionals, parse } from './cli-args.js';
import { UsageError } from './cli-error.js';
import type { CliIo } from './cli-io.js';
import { CREDENTIALS_HELP, TARGET_HELP, TARGET_OPTIONS, vendClientOptions } from './cli-target.js';
import { TokenVendingClient } from './token-vending-client.js';

export const DEFAULT_AGENT_TOKEN_FILE = '.local/agent-token';

export const AGENT_HELP = `Usage: tvm agent [--port N] [--token-file PATH [--token-file-mode M] | --token-env NAME]
                 [--url U] [--region R]

Serves tokens on http://${AGENT_HOST}:<port> (loopback only) to services on this host or in
this ECS task that neither sign requests nor use the library, as the AWS Secrets Manager
Agent serves secrets. One cache for every caller, with the library's rules.

  GET /token?scope=<id>&min_ttl=<s>   the vend API's answer: {"access_token","token_type",
                                      "expires_in","expires_at","scope"}; errors as
                                      application/problem+json with its codes; add
                                      revoked=<fingerprint> when the provider refused a token
  GET /healthz                        {"status":"ok"}, for health checks

Every request but /healthz must carry the header ${AGENT_TOKEN_HEADER} with the agent
token (401 without it, 403 with another; 400 for a request with X-Forwarded-For), so that
a request forged through a service (SSRF) is refused. tvm makes a new agent token at each
start and writes it to --token-file; it never prints it.

Options:
  --port N             port on ${AGENT_HOST} (default ${DEFAULT_AGENT_PORT}; 0 picks a free one)
  --token-file PATH    where to write the agent token (default ./${DEFAULT_AGENT_TOKEN_FILE});
                       replaced at start, removed on stop
  --token-file-mode M  the file's mode, octal (default 600; 640 or 644 lets a service
                       running as another user of the same host or task read it)
  --token-env NAME     take the agent token from variable NAME instead (at least
                       ${MIN_AGENT_TOKEN_LENGTH} characters); no file is written
${TARGET_HELP}
  -h, --help           show this help

${CREDENTIALS_HELP}

Logs one JSON line per request on stderr (path, scope, status, code, the token's
fingerprint, milliseconds), never a token. Stops on SIGINT or SIGTERM.

Exit codes: 0 stopped, 1 error ("tvm: <code>: <title>" on stderr), 2 usage.
`;

function parsePort(value: string | undefined): number {
  if (value === undefined) return DEFAULT_AGENT_PORT;
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65535) {
    throw new UsageError('--port must be a port number, 0..65535', 'agent');
  }
  return Number(value);
}

function parseMode(value: string | undefined): number {
  if (value === undefined) return 0o600;
  if (!/^0?[0-7]{3}$/.test(value))
    throw new UsageError('--token-file-mode must be octal, e.g. 640', 'agent');
  const mode = Number.parseInt(value, 8);
  if ((mode & 0o600) !== 0o600 || (mode & 0o133) !== 0) {
    throw new UsageError(
      '--token-file-mode must let the owner read and write, and nobody write or execute',
      'agent',
    );
  }
  return mode;
}

/** Resolves when `signal` aborts, or at the process's SIGINT or SIGTERM. */
function stopped(signal: AbortSignal | undefined): Promise<void> {
  if (signal) {
    return new Promise((done) => {
      if (signal.aborted) done();
      else signal.addEventListener('abort', () => done(), { once: true });
    });
  }
  return new Promise((done) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      done();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

export async function agentCommand(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parse(
    args,
    {
      port: { type: 'string' },
      'token-file': { type: 'string' },
      'token-file-mode': { type: 'string' },
      'token-env': { type: 'string' },
      ...TARGET_OPTIONS,
      help: { type: 'boolean', short: 'h' },
    },
    'agent',
  );
  if (values.help) {
    io.stdout.write(AGENT_HELP);
    return 0;
  }
  noPositionals(positionals, 'agent');
  const port = parsePort(values.port);
  const fromEnv = values['token-env'];
  if (
    fromEnv !== undefined &&
    (values['token-file'] !== undefined || values['token-file-mode'] !== undefined)
  ) {
    throw new UsageError(
      '--token-env takes the token from the environment: no --token-file',
      'agent',
    );
  }
  const mode = parseMode(values['token-file-mode']);
  const client = new TokenVendingClient(await vendClientOptions(values, io, 'agent'));
  const agentToken = fromEnv !== undefined ? agentTokenFromEnv(io.env, fromEnv) : newAgentToken();
  const tokenFile =
    fromEnv === undefined
      ? resolve(io.cwd, values['token-file'] ?? DEFAULT_AGENT_TOKEN_FILE)
      : undefined;
  const log = (line: Readonly<Record<string, unknown>>) =>
    io.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), ...line })}\n`);

  // The port first: an agent that cannot listen (another one runs there)
  // must not replace, then remove, the token file of the one that runs.
  const agent = await startAgent({
    client,
    agentToken,
    port,
    log,
    ...(io.clock ? { clock: io.clock } : {}),
  });
  try {
    if (tokenFile) await writeAgentTokenFile(tokenFile, agentToken, mode);
  } catch (error) {
    await agent.close();
    throw error;
  }
  try {
    log({
      level: 'INFO',
      message: 'listening',
      url: agent.url,
      header: AGENT_TOKEN_HEADER,
      ...(tokenFile ? { tokenFile } : { tokenEnv: fromEnv }),
    });
    await stopped(io.signal);
    await agent.close();
    log({ level: 'INFO', message: 'stopped' });
    return 0;
  } finally {
    if (tokenFile) await removeAgentTokenFile(tokenFile, agentToken);
  }
}
