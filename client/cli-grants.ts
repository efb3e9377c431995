/** `tvm grants`: "what am I allowed?", from the vend URL's `GET /grants`. */
import { noPositionals, parse } from './cli-args.js';
import type { CliIo } from './cli-io.js';
import { CREDENTIALS_HELP, TARGET_HELP, TARGET_OPTIONS, vendClientOptions } from './cli-target.js';
import { TokenVendingClient } from './token-vending-client.js';
import type { Grants } from './types.js';

export const GRANTS_HELP = `Usage: tvm grants [--url U] [--region R] [--json]

Prints what the vend URL grants the caller (GET /grants): the principal as the vend
function sees it (the ARN the Function URL's IAM check passed on, an assumed-role
session for a role), the scopes it may have, and whether it may have the unscoped
token. Never a token, never another caller's grants. Signs exactly as 'tvm token'
does, so it answers for the identity 'tvm token' would get a 403 for.

Options:
${TARGET_HELP}
  --json         print the answer as JSON: {"principal","scopes","unscoped","policy_version"}
  -h, --help     show this help

${CREDENTIALS_HELP}

Exit codes: 0 ok, 1 error ("tvm: <code>: <title>" on stderr), 2 usage.
`;

/** The grants as people read them: one field a line, one scope a line. */
export function formatGrants(grants: Grants): string {
  const pad = (label: string) => label.padEnd(12);
  const [first, ...rest] = grants.scopes;
  const lines = [
    `${pad('principal')}${grants.principal}`,
    `${pad('unscoped')}${grants.unscoped ? 'granted' : 'not granted'}`,
    `${pad(`scopes (${grants.scopes.length})`)}${first ?? 'none'}`,
    ...rest.map((scope) => `${pad('')}${scope}`),
  ];
  if (grants.policyVersion !== undefined) lines.push(`${pad('policy')}${grants.policyVersion}`);
  return `${lines.join('\n')}\n`;
}

export async function grantsCommand(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parse(
    args,
    { ...TARGET_OPTIONS, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    'grants',
  );
  if (values.help) {
    io.stdout.write(GRANTS_HELP);
    return 0;
  }
  noPositionals(positionals, 'grants');
  const client = new TokenVendingClient(await vendClientOptions(values, io, 'grants'));
  const grants = await client.getGrants();
  if (values.json) {
    const body = {
      principal: grants.principal,
      scopes: grants.scopes,
      unscoped: grants.unscoped,
      ...(grants.policyVersion !== undefined ? { policy_version: grants.policyVersion } : {}),
    };
    io.stdout.write(`${JSON.stringify(body)}\n`);
  } else {
    io.stdout.write(formatGrants(grants));
  }
  return 0;
}
