/**
 * `npm run policy -- validate <file>` (and `tvm policy validate <file>`):
 * checks an access policy document with the functions' own check, the one
 * AppConfig's validator runs before a version can deploy. Exit codes: 0 valid,
 * 1 invalid or unreadable, 2 usage.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { AccessPolicy } from '../functions/core/access-policy.js';
import { ConfigError, PolicyInvalidError } from '../functions/core/errors.js';
import { documentDigest } from '../functions/core/policy-source.js';

export const POLICY_HELP = `Usage: npm run policy -- validate <file>

Checks an access policy document (JSON: scopes, grants, keyIssuing) with the
same check the functions run when they load it and AppConfig's validator runs
before a version deploys. Prints a summary, or every problem, one per line.

Exit codes: 0 ok, 1 error (invalid or unreadable), 2 usage.
`;

export interface PolicyCliIo {
  readonly cwd: string;
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown };
}

/** Runs one command line; resolves to the exit code. */
export async function runPolicyCli(args: readonly string[], io: PolicyCliIo): Promise<number> {
  const [command, file, extra] = args;
  if (command === '-h' || command === '--help') {
    io.stdout.write(POLICY_HELP);
    return 0;
  }
  if (command !== 'validate' || file === undefined || extra !== undefined) {
    io.stderr.write(`policy: usage: validate <file>\n${POLICY_HELP}`);
    return 2;
  }
  let text: string;
  try {
    text = await readFile(resolve(io.cwd, file), 'utf8');
  } catch (error) {
    io.stderr.write(
      `policy: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})\n`,
    );
    return 1;
  }
  let policy: AccessPolicy | undefined;
  let problems: readonly string[] = [];
  try {
    policy = AccessPolicy.parse(text, { source: file });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems = error instanceof PolicyInvalidError ? error.problems : [error.message];
  }
  if (policy === undefined) {
    // One line per problem, as the checks listed them.
    const lines = problems.map((p) => `  - ${p}`).join('\n');
    io.stderr.write(`${file} is invalid:\n${lines}\n`);
    return 1;
  }
  io.stdout.write(
    `${file} is valid: ${policy.scopes.size} scopes, ${policy.principals.length} principals, ` +
      `${policy.keyIssuingIds?.length ?? 0} key-issuing ids (${documentDigest(text)}, ${text.length} bytes)\n`,
  );
  return 0;
}
