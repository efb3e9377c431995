/**
 * `npm start` as a user runs it, in a child process, for black-box tests: the
 * same entry point under a shell that stays its parent (no exec), so a test
 * can end that parent the way `kill -9 <npm pid>` ends npm.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const ROOT = resolve(import.meta.dirname, '../..');
/** What `--import tsx` resolves to, from a directory outside the project. */
const TSX_LOADER = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;

/**
 * A project directory of a test's own: the repository's package, code and
 * installed modules linked in, so `npm start` and `npm run admin` run there
 * as in a checkout, with their own `.local/`, keys and policy files.
 */
export async function projectOfItsOwn(prefix: string): Promise<string> {
  const project = await mkdtemp(join(tmpdir(), prefix));
  for (const name of [
    'package.json',
    'tsconfig.json',
    'node_modules',
    'functions',
    'client',
    'local',
  ]) {
    await symlink(join(ROOT, name), join(project, name));
  }
  return project;
}

export interface NpmStart {
  readonly child: ChildProcess;
  /** Everything printed so far, stdout and stderr. */
  output(): string;
  /** The local URL the stack serves on. */
  readonly url: string;
}

/** Starts the local stack in `cwd` with `env` over this process's, and waits until it serves. */
export async function startNpmStart(cwd: string, env: Record<string, string>): Promise<NpmStart> {
  const child = spawn(
    'sh',
    [
      '-c',
      `"${process.execPath}" --import "${TSX_LOADER}" "${join(ROOT, 'local/start.ts')}"; true`,
    ],
    { cwd, env: { ...process.env, PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout?.on('data', (d) => {
    output += d;
  });
  child.stderr?.on('data', (d) => {
    output += d;
  });
  await new Promise<void>((ready, fail) => {
    const timer = setTimeout(
      () => fail(new Error(`npm start did not come up:\n${output}`)),
      45_000,
    );
    const check = () => {
      if (output.includes('Serving until')) {
        clearTimeout(timer);
        ready();
      }
    };
    child.stdout?.on('data', check);
    child.once('exit', () => fail(new Error(`npm start exited:\n${output}`)));
  });
  const info = JSON.parse(readFileSync(join(cwd, '.local/stack.json'), 'utf8'));
  return { child, output: () => output, url: info.functionUrl as string };
}

/** `npm start` itself, in a process group of its own. */
export interface NpmStartGroup {
  readonly child: ChildProcess;
  /** Everything printed so far, stdout and stderr. */
  output(): string;
  /** Ends whatever is left of the group (npm, the shell, node). */
  kill(): void;
}

/**
 * Runs `npm start` in `cwd` with exactly `env`, in its own process group so
 * that `kill` can end whatever is left of it, and waits until it serves.
 */
export async function startNpmStartGroup(
  cwd: string,
  env: Record<string, string>,
): Promise<NpmStartGroup> {
  const child = spawn('npm', ['start'], {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout?.on('data', (d) => {
    output += d;
  });
  child.stderr?.on('data', (d) => {
    output += d;
  });
  const kill = () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    try {
      process.kill(-(child.pid as number), 'SIGKILL');
    } catch {
      // the group is gone already
    }
  };
  await new Promise<void>((ready, fail) => {
    const timer = setTimeout(() => {
      kill();
      fail(new Error(`npm start did not come up:\n${output}`));
    }, 45_000);
    const check = () => {
      if (!output.includes('Serving until')) return;
      clearTimeout(timer);
      child.stdout?.off('data', check);
      ready();
    };
    child.stdout?.on('data', check);
    child.once('exit', () => fail(new Error(`npm start exited:\n${output}`)));
  });
  return { child, output: () => output, kill };
}

/**
 * What every child of these tests gets: no AWS_* or stack variables of the
 * test process, as an operator's fresh shell has none.
 */
export const CHILD_ENV = {
  PATH: process.env.PATH ?? '',
  HOME: process.env.HOME ?? tmpdir(),
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
};

/** What a command line run answered. */
export interface CommandRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** `npm run --silent admin -- <event>` in `project`, as an operator runs it, with `env` only. */
export function npmRunAdmin(
  project: string,
  event: object,
  env: Record<string, string>,
): Promise<CommandRun> {
  return new Promise((done) => {
    execFile(
      'npm',
      ['run', '--silent', 'admin', '--', JSON.stringify(event)],
      { cwd: project, env, timeout: 30_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        done({ code, stdout, stderr });
      },
    );
  });
}
