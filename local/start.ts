import { ConfigError } from '../functions/core/errors.js';
import {
  DEFAULT_STACK_FILE,
  isDemoIdentity,
  type LocalStack,
  startLocalStack,
  tryLines,
} from './stack.js';

// `npm start`: runs the local stack until SIGINT or SIGTERM, or until npm ends.

/** How often the stack checks that npm (its parent process) still runs. */
const PARENT_CHECK_MS = 250;

let stack: LocalStack | undefined;
let stopping = false;
const stop = (running: LocalStack) =>
  running.stop().then(
    () => process.exit(0),
    () => process.exit(1),
  );
const shutdown = (reason: string) => {
  if (stopping) return;
  stopping = true;
  process.stdout.write(`\n${reason}: stopping the local stack\n`);
  // While starting, the stack stops as soon as it is up.
  if (stack) void stop(stack);
};
// Installed before anything starts: a signal that came before its handler
// would kill the process at once, leaving DynamoDB Local and the stack file.
// `on`, not `once`: a Ctrl-C reaches the stack twice (from the terminal, and
// from npm passing it on).
process.on('SIGINT', () => shutdown('SIGINT'));
process.on('SIGTERM', () => shutdown('SIGTERM'));
// npm passes no SIGTERM on to its script: `kill <npm pid>` ends npm alone and
// would leave the stack serving, orphaned. A new parent means npm is gone.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) shutdown('npm start ended');
}, PARENT_CHECK_MS).unref();

try {
  stack = await startLocalStack(process.env);
  if (stopping) await stop(stack);
  const { info } = stack;
  const lines = [
    '',
    `Token vending function URL: ${info.functionUrl}  (SigV4, service lambda, region ${info.region})`,
    `Provider:                   ${info.providerUrl}${info.providerSimulated ? '  (simulator)' : ''}`,
    `DynamoDB:                   ${info.dynamodbEndpoint}  table ${info.tableName}`,
    `${isDemoIdentity(info.identity) ? 'Demo identity: ' : 'Identity:      '}             ${info.identity.arn}`,
    `                            access key ${info.identity.accessKeyId}${info.identity.sessionToken === undefined ? '' : ' (temporary: send its session token as X-Amz-Security-Token)'}`,
    `Stack file:                 ${DEFAULT_STACK_FILE}  (sealing key beside it, mode 0600)`,
    `Scheduled refresh:          every ${info.refreshIntervalSeconds} s`,
    `Vend instances:             ${info.instances ?? 1}${(info.instances ?? 1) > 1 ? '  (LOCAL_INSTANCES: requests spread over them, each its own memory)' : ''}`,
    '',
    'Try:',
    ...tryLines(stack),
    '',
    'Serving until Ctrl-C.',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
} catch (error) {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(
    `${error instanceof ConfigError ? '' : 'Could not start the local stack: '}${message}\n`,
  );
  process.exit(1);
}
