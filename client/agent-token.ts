/**
 * The agent token: the secret a caller of `tvm agent` shows in its
 * `X-Token-Vending-Agent-Token` header, so that a request forged through a
 * service (SSRF) is refused. Made at each start and written to a file only the
 * service can read, or taken from an environment variable; never logged.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { CliError } from './cli-error.js';

/** The shortest agent token taken from the environment: anything shorter could be guessed. */
export const MIN_AGENT_TOKEN_LENGTH = 16;

/** 256 random bits, base64url: fits a header as it is. */
export function newAgentToken(): string {
  return randomBytes(32).toString('base64url');
}

/** The token in variable `name`, checked: long enough and a valid header value. */
export function agentTokenFromEnv(
  env: Readonly<Record<string, string | undefined>>,
  name: string,
): string {
  const value = env[name];
  if (value === undefined || value === '') {
    throw new CliError('invalid_agent_token', `${name} is not set`, 2);
  }
  if (value.length < MIN_AGENT_TOKEN_LENGTH || !/^[\x21-\x7e]+$/.test(value)) {
    throw new CliError(
      'invalid_agent_token',
      `${name} must hold at least ${MIN_AGENT_TOKEN_LENGTH} visible ASCII characters, no spaces`,
      2,
    );
  }
  return value;
}

/**
 * The mode of a directory made for a token file of `mode`: the owner's, and
 * search (x) for the group or others the file is readable by, so they can
 * reach it without listing the directory (0644 gives 0711).
 */
export function tokenDirectoryMode(mode: number): number {
  return 0o700 | (mode & 0o040 ? 0o010 : 0) | (mode & 0o004 ? 0o001 : 0);
}

/**
 * Writes the token to `path` with `mode`, atomically: a reader sees the old
 * file or the whole new one, and a link at `path` is replaced, not followed.
 * A missing directory is made (tokenDirectoryMode).
 */
export async function writeAgentTokenFile(
  path: string,
  token: string,
  mode: number,
): Promise<void> {
  const directory = dirname(path);
  const directoryMode = tokenDirectoryMode(mode);
  const firstMade = await mkdir(directory, { recursive: true, mode: directoryMode });
  // The umask may have taken bits from the mode: set it on each directory made.
  if (firstMade !== undefined) {
    for (let dir = directory; ; dir = dirname(dir)) {
      await chmod(dir, directoryMode);
      if (dir === firstMade || dirname(dir) === dir) break;
    }
  }
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    await writeFile(temporary, `${token}\n`, { mode, flag: 'wx' });
    // The umask may have taken bits from `mode` (a 0640 asked for, 0600 made).
    await chmod(temporary, mode);
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new CliError('token_file_unwritable', `cannot write ${path} (${code})`, 1, {
      cause: error,
    });
  }
}

/** Removes the token file, unless another agent has written its own token there since. */
export async function removeAgentTokenFile(path: string, token: string): Promise<void> {
  const current = await readFile(path, 'utf8').catch(() => undefined);
  if (current?.trim() === token) await rm(path, { force: true });
}
