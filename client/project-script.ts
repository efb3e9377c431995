import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CliError } from './cli-error.js';

export interface ProjectScriptOptions {
  /** The token vending project directory. */
  readonly cwd: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The npm script of the project, e.g. `admin`. */
  readonly script: string;
  readonly args: readonly string[];
  /** What to do instead, for the message when there is no such script. */
  readonly hint: string;
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown };
}

/**
 * The token vending project's package name. A project script runs only there:
 * another project's `admin` or `policy` script is not ours, and its exit 0
 * would read as "valid" or "done".
 */
export const PROJECT_PACKAGE_NAME = 'token-vending-functions';

/** Why `<cwd>/package.json` cannot run the script, or undefined when it can. */
async function scriptProblem(cwd: string, script: string): Promise<string | undefined> {
  let pkg: { name?: unknown; scripts?: Record<string, unknown> };
  try {
    pkg = JSON.parse(await readFile(join(cwd, 'package.json'), 'utf8'));
  } catch {
    return `no "${script}" script in ./package.json`;
  }
  if (pkg.name !== PROJECT_PACKAGE_NAME) {
    return `./package.json is not the token vending project's (${PROJECT_PACKAGE_NAME})`;
  }
  return typeof pkg.scripts?.[script] === 'string'
    ? undefined
    : `no "${script}" script in ./package.json`;
}

/**
 * Runs `npm run --silent <script> -- <args>` in the project directory, for
 * commands that run the project's own code (the local admin, the access policy
 * check). Its stdout and stderr are passed through; resolves to its exit code.
 */
export async function runProjectScript(options: ProjectScriptOptions): Promise<number> {
  const { script } = options;
  const problem = await scriptProblem(options.cwd, script);
  if (problem !== undefined) {
    throw new CliError('not_available', `${problem}: ${options.hint}`);
  }
  return new Promise((resolve, reject) => {
    const child = spawn('npm', ['run', '--silent', script, '--', ...options.args], {
      cwd: options.cwd,
      env: { ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (text: string) => options.stdout.write(text));
    child.stderr.on('data', (text: string) => options.stderr.write(text));
    child.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new CliError(
          'not_available',
          error.code === 'ENOENT'
            ? `npm is not on PATH: this runs as npm run ${script}`
            : `could not run npm run ${script} (${error.code ?? error.name})`,
          1,
          { cause: error },
        ),
      ),
    );
    // 'close' comes after the streams ended: everything was passed on.
    child.once('close', (code) => resolve(code ?? 1));
  });
}
