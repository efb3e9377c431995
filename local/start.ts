import { ConfigError } from '../functions/core/errors.js';
import { curlCommand, DEFAULT_STACK_FILE, startLocalStack } from './stack.js';

// `npm start`: runs the local stack until SIGINT or SIGTERM.
try {
  const stack = await startLocalStack(process.env);
  const { info } = stack;
  const lines = [
    '',
    `Token vending function URL: ${info.functionUrl}  (SigV4, service lambda, region ${info.region})`,
    `Provider:                   ${info.providerUrl}${info.providerSimulated ? '  (simulator)' : ''}`,
    `DynamoDB:                   ${info.dynamodbEndpoint}  table ${info.tableName}`,
    `Demo identity:              ${info.identity.arn}`,
    `                            access key ${info.identity.accessKeyId}${info.identity.sessionToken === undefined ? '' : ' (temporary: send its session token as X-Amz-Security-Token)'}`,
    `Stack file:                 ${DEFAULT_STACK_FILE}  (sealing key beside it, mode 0600)`,
    `Scheduled refresh:          every ${info.refreshIntervalSeconds} s`,
    '',
    'Try:',
    `  ${curlCommand(info)}`,
    `  npm run admin -- '{"action":"status"}'`,
    '',
    'Serving until Ctrl-C.',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`\n${signal}: stopping the local stack\n`);
    stack.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));
} catch (error) {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(
    `${error instanceof ConfigError ? '' : 'Could not start the local stack: '}${message}\n`,
  );
  process.exit(1);
}
