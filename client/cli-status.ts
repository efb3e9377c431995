/**
 * `tvm status`: the admin `status` event, run where `tvm admin` runs it (the
 * local stack, or the admin function in AWS with --function), printed as
 * tables with ISO 8601 times; `--json` prints the answer as `tvm admin` does.
 */
import { formatPayload, invokeAdminFunction, requireLocalStack, runLocalAdmin } from './admin.js';
import { noPositionals, parse } from './cli-args.js';
import { CliError } from './cli-error.js';
import type { CliIo } from './cli-io.js';
import { STACK_FILE } from './stack-file.js';
import { formatStatus, isStatusReport } from './status-table.js';

export const STATUS_HELP = `Usage: tvm status [--function NAME] [--region R] [--json]

Shows what the token cache holds, never a token: each cached scope with its state,
issued and expiry times (ISO 8601, UTC), the seconds it has left, whether it is in
use, its lease and last refresh failure; then the key-issuing jobs. It runs the admin
event {"action":"status"} where 'tvm admin' would.

Options:
  --function NAME  invoke this admin function (name or ARN) in AWS with Lambda Invoke
                   (needs the package @aws-sdk/client-lambda installed next to tvm)
  --region R       region of the function (default: $AWS_REGION, then the AWS profile's)
  --json           print the admin function's answer as JSON (epoch seconds), as
                   'tvm admin '{"action":"status"}'' does
  -h, --help       show this help

Without --function it runs against the local stack that npm start runs in this
directory (./${STACK_FILE}), through 'npm run --silent admin'.

Exit codes: 0 ok, 1 error ("tvm: <code>: <title>" on stderr), 2 usage.
`;

const EVENT = { action: 'status' } as const;

export async function statusCommand(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parse(
    args,
    {
      function: { type: 'string' },
      region: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    'status',
  );
  if (values.help) {
    io.stdout.write(STATUS_HELP);
    return 0;
  }
  noPositionals(positionals, 'status');
  let payload: string;
  if (values.function) {
    const region = values.region || io.env.AWS_REGION;
    payload = await invokeAdminFunction({
      functionName: values.function,
      event: EVENT,
      ...(region ? { region } : {}),
    });
  } else {
    await requireLocalStack(io.cwd, 'status');
    let captured = '';
    const code = await runLocalAdmin({
      cwd: io.cwd,
      env: io.env,
      event: EVENT,
      stdout: { write: (text: string) => (captured += text) },
      stderr: io.stderr,
    });
    if (code !== 0) {
      io.stdout.write(captured);
      return code;
    }
    payload = captured;
  }
  if (values.json) {
    io.stdout.write(formatPayload(payload));
    return 0;
  }
  let report: unknown;
  try {
    report = JSON.parse(payload);
  } catch {
    report = undefined;
  }
  if (!isStatusReport(report)) {
    throw new CliError('invalid_response', 'the status answer is not {"now","tokens","key_jobs"}');
  }
  io.stdout.write(formatStatus(report));
  return 0;
}
