import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { StackInfo } from '../local/stack.js';

/** Where `npm start` writes what it started, relative to the working directory. */
export const STACK_FILE = '.local/stack.json';

/** The parts of `.local/stack.json` the CLI uses. */
export type LocalStackFile = Pick<StackInfo, 'functionUrl' | 'region' | 'identity'>;

export class StackFileError extends Error {
  override name = 'StackFileError' as const;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Reads `<cwd>/.local/stack.json`; undefined when there is none. */
export async function readStackFile(cwd: string): Promise<LocalStackFile | undefined> {
  const path = join(cwd, STACK_FILE);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new StackFileError(`cannot read ${STACK_FILE}`, { cause: error });
  }
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
  return {
    functionUrl: json.functionUrl,
    region: json.region,
    identity: {
      accessKeyId: identity.accessKeyId,
      secretAccessKey: identity.secretAccessKey,
      arn: identity.arn,
    },
  };
}
