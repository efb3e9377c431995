import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Where `npm start` writes what it started, relative to the working directory. */
export const STACK_FILE = '.local/stack.json';

/**
 * The parts of `.local/stack.json` the CLI uses: the client's own copy of the
 * shape `npm start` writes (test/integration/local-stack.test.ts reads back
 * what the stack writes).
 */
export interface LocalStackFile {
  readonly functionUrl: string;
  readonly region: string;
  /** The local identity to sign with. */
  readonly identity: {
    readonly accessKeyId: string;
    readonly secretAccessKey: string;
    /** Present when the identity stands for temporary credentials. */
    readonly sessionToken?: string;
    readonly arn: string;
  };
}

export class StackFileError extends Error {
  override name = 'StackFileError' as const;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Reads `<cwd>/.local/stack.json`; undefined when there is none. */
export async function readStackFile(cwd: string): Promise<LocalStackFile | undefined> {
  let text: string;
  try {
    text = await readFile(join(cwd, STACK_FILE), 'utf8');
  } catch (error) {
    return unreadable(error);
  }
  return parseStackFile(text);
}

/**
 * `readStackFile`, synchronously: for the library's constructor, which reads
 * it once per client when it is given no URL.
 */
export function readStackFileSync(cwd: string): LocalStackFile | undefined {
  let text: string;
  try {
    text = readFileSync(join(cwd, STACK_FILE), 'utf8');
  } catch (error) {
    return unreadable(error);
  }
  return parseStackFile(text);
}

function unreadable(error: unknown): undefined {
  if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
  throw new StackFileError(`cannot read ${STACK_FILE}`, { cause: error });
}

/** The stack file's text, checked. */
export function parseStackFile(text: string): LocalStackFile {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new StackFileError(`${STACK_FILE} is not JSON`);
  }
  const identity = isRecord(json) ? json.identity : undefined;
  if (
    !isRecord(json) ||
    typeof json.functionUrl !== 'string' ||
    typeof json.region !== 'string' ||
    !isRecord(identity) ||
    typeof identity.accessKeyId !== 'string' ||
    typeof identity.secretAccessKey !== 'string' ||
    typeof identity.arn !== 'string'
  ) {
    throw new StackFileError(`${STACK_FILE} lacks functionUrl, region or identity`);
  }
  const { sessionToken } = identity;
  if (sessionToken !== undefined && (typeof sessionToken !== 'string' || sessionToken === '')) {
    throw new StackFileError(`${STACK_FILE} has an identity.sessionToken that is not a string`);
  }
  return {
    functionUrl: json.functionUrl,
    region: json.region,
    identity: {
      accessKeyId: identity.accessKeyId,
      secretAccessKey: identity.secretAccessKey,
      ...(sessionToken !== undefined ? { sessionToken } : {}),
      arn: identity.arn,
    },
  };
}
