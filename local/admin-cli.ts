/**
 * `npm run admin -- '<event json>'`: one admin event (docs/operations.md) against
 * the running local stack. The result is printed as JSON on stdout; errors as
 * `admin: <code>: <message>` on stderr, never with a stack trace. Exit codes:
 * 0 ok, 1 error (a failed key-issuing run also prints its result on stdout),
 * 2 usage.
 *
 * `runAdminCli` takes its arguments, environment and streams as parameters;
 * `local/admin.ts` calls it with the real ones.
 */
import {
  ADMIN_EVENTS,
  AdminError,
  type AdminEvent,
  parseAdminEvent,
  UNSCOPED,
  withCode,
} from '../functions/admin/admin-event.js';
import { type Clock, systemClock } from '../functions/core/clock.js';
import type { Env } from '../functions/core/config.js';
import { describe } from '../functions/core/describe-error.js';
import {
  ConfigError,
  SealerUnavailableError,
  StoreUnavailableError,
} from '../functions/core/errors.js';
import type { CoreLogger } from '../functions/core/token-service-types.js';
import { KeyIssuingError, KeyIssuingFailedError } from '../functions/issue-keys/errors.js';
import { parseKeyIssuingEvent } from '../functions/issue-keys/event.js';
import {
  checkStackRunning,
  createLocalAdmin,
  LocalAdminError,
  resolveLocalAdmin,
} from './admin-wiring.js';
import { SealingKeyError } from './sealing-key.js';
import type { StackInfo } from './stack.js';
import { StackFileError } from './stack-config.js';
import { askStackToForget, type ForgetRequest } from './stack-control.js';

export interface AdminIo {
  readonly env: Env;
  readonly cwd: string;
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown };
  /** Default: real time. */
  readonly clock?: Clock;
  /** Default: the global fetch (only the check that the stack is up uses it directly). */
  readonly fetch?: typeof fetch;
}

export const ADMIN_USAGE = `Usage: npm run admin -- '<event json>'

Runs one admin event against the local stack that npm start runs in this
directory (found through .local/stack.json and the environment npm start was
given) and prints the result as JSON. Events:
${ADMIN_EVENTS.map((event) => `  ${event}`).join('\n')}

Exit codes: 0 ok, 1 error ("admin: <code>: <message>" on stderr), 2 usage.
`;

/** Logs to stderr, warnings and errors only: stdout carries the result alone. */
function stderrLogger(stderr: AdminIo['stderr']): CoreLogger {
  const at =
    (level: string) =>
    (message: unknown, ...extra: unknown[]): void => {
      const fields = extra.map((value) =>
        value instanceof Error ? { error: describe(value) } : value,
      );
      const line = Object.assign(
        { level, message },
        ...fields.filter((f) => typeof f === 'object'),
      );
      stderr.write(`${JSON.stringify(line)}\n`);
    };
  return { info: () => undefined, warn: at('WARN'), error: at('ERROR') } as unknown as CoreLogger;
}

class UsageError extends Error {}

/**
 * After an invalidate or a refresh, the running stack's instances forget what
 * they hold in memory for the scope, so the next vend shows what was done (in
 * AWS, instances keep a token in memory for up to 60 s). A stack that cannot
 * be told is reported, not an error: the table was changed. Answers whether
 * the stack was told (undefined for other actions).
 */
async function forgetInStack(
  event: AdminEvent,
  info: StackInfo,
  io: AdminIo,
): Promise<boolean | undefined> {
  let request: ForgetRequest;
  if (event.action === 'invalidate' && event.all) request = { all: true };
  else if (event.action === 'invalidate' || event.action === 'refresh') {
    request = { scopes: [event.scope ?? UNSCOPED] };
  } else return undefined;
  const told =
    info.control !== undefined && (await askStackToForget(info.control, request, io.fetch));
  if (!told) {
    io.stderr.write(
      'admin: note: the running stack was not told to forget its in-memory tokens; ' +
        'its vends may serve the old token for up to 60 s\n',
    );
  }
  return told;
}

/** What an invalidate's note says once the local stack's instances were told. */
export const LOCAL_INVALIDATE_NOTE =
  "The running stack's instances dropped their in-memory copy; the next vend mints anew.";

/**
 * The admin's answer as the local stack makes it true: an invalidate's note
 * speaks of Lambda instances keeping their copy up to 60 s, but the local
 * stack's were told at once.
 */
function asLocalResult(event: AdminEvent, result: unknown, told: boolean | undefined): unknown {
  if (event.action !== 'invalidate' || told !== true) return result;
  if (typeof result !== 'object' || result === null || !('note' in result)) return result;
  return { ...result, note: LOCAL_INVALIDATE_NOTE };
}

function parseArguments(argv: readonly string[]): unknown {
  if (argv.length === 0) throw new UsageError('missing the event JSON');
  if (argv.length > 1) throw new UsageError('expected one argument, the event JSON (quote it)');
  try {
    return JSON.parse(argv[0] as string);
  } catch {
    throw new UsageError('the event is not valid JSON');
  }
}

/** `error` and each error in its `cause` chain, in order. */
function causesOf(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e = error; e !== undefined && !chain.includes(e); ) {
    chain.push(e);
    e = e instanceof Error ? e.cause : undefined;
  }
  return chain;
}

/** The token store failed (DynamoDB), as opposed to KMS, which shares its error class. */
const tokenStoreFailed = (error: unknown): error is StoreUnavailableError =>
  error instanceof StoreUnavailableError && !(error instanceof SealerUnavailableError);

/**
 * The local hint when the admin could not use DynamoDB (the token store or the
 * key-job store), else undefined: a table missing at that endpoint (a
 * TABLE_NAME the stack does not use), or the endpoint not answering.
 */
function dynamoDbHint(error: unknown): string | undefined {
  const chain = causesOf(error);
  const storeFailed = chain.some(
    (e) =>
      tokenStoreFailed(e) || (e instanceof KeyIssuingError && e.code === 'job_store_unavailable'),
  );
  if (!storeFailed) return undefined;
  return chain.some((e) => describe(e).name === 'ResourceNotFoundException')
    ? 'DynamoDB has no such table; is TABLE_NAME the one npm start uses?'
    : "is the local stack's DynamoDB running (npm start)?";
}

function report(error: unknown, io: AdminIo): number {
  let line: string;
  // The admin core names a failed store in its own error (store_unavailable).
  const cause = error instanceof AdminError ? error.cause : error;
  if (tokenStoreFailed(cause)) {
    line = withCode('store_unavailable', cause.message);
  } else if (error instanceof KeyIssuingFailedError) {
    // Scripts see which ids were issued, skipped and failed (never key material).
    io.stdout.write(`${JSON.stringify(error.result, null, 2)}\n`);
    line = withCode(error.code, error.message);
  } else if (error instanceof AdminError || error instanceof LocalAdminError) {
    line = withCode(error.code, error.message);
  } else if (error instanceof KeyIssuingError) {
    line = withCode(error.code, error.message);
  } else if (error instanceof ConfigError) {
    line = withCode('invalid_config', error.message);
  } else if (error instanceof StackFileError) {
    line = withCode('invalid_stack_file', error.message);
  } else if (error instanceof SealingKeyError) {
    line = withCode('no_sealing_key', error.message);
  } else {
    const { name, code } = describe(error);
    line = `internal_error: ${String(name)}${typeof code === 'string' ? ` (${code})` : ''}`;
  }
  const hint = dynamoDbHint(error);
  io.stderr.write(`admin: ${line}${hint === undefined ? '' : `: ${hint}`}\n`);
  return 1;
}

/** Runs one admin command line; resolves to the exit code. Never throws. */
export async function runAdminCli(argv: readonly string[], io: AdminIo): Promise<number> {
  if (argv.length === 1 && (argv[0] === '--help' || argv[0] === '-h')) {
    io.stdout.write(ADMIN_USAGE);
    return 0;
  }
  let event: unknown;
  try {
    event = parseArguments(argv);
  } catch (error) {
    io.stderr.write(`admin: usage: ${(error as Error).message}\n${ADMIN_USAGE}`);
    return 2;
  }
  let close = (): void => undefined;
  try {
    // A bad event is answered before anything is looked up.
    const parsed = parseAdminEvent(event);
    if (parsed.action === 'issue-keys') parseKeyIssuingEvent(parsed.event);
    const target = await resolveLocalAdmin(io.env, io.cwd, io.fetch);
    if (target.warning !== undefined) io.stderr.write(`admin: warning: ${target.warning}\n`);
    await checkStackRunning(target, io.fetch);
    const clock = io.clock ?? systemClock;
    const admin = createLocalAdmin(target, { clock, logger: stderrLogger(io.stderr) });
    close = admin.close;
    const result = await admin.run(event);
    const told = await forgetInStack(parsed, target.info, io);
    io.stdout.write(`${JSON.stringify(asLocalResult(parsed, result, told), null, 2)}\n`);
    return 0;
  } catch (error) {
    return report(error, io);
  } finally {
    close();
  }
}
