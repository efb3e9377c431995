/**
 * The local stack's AES-256-GCM sealing key, shared with `npm run admin`
 * through a file beside `.local/stack.json` (mode 0600, removed on stop), so a
 * token either process seals is one the other can unseal. A new key is made
 * at each start, as before: an item sealed by an earlier stack is a miss.
 */
import { randomBytes } from 'node:crypto';
import { chmod, readFile, rm, writeFile } from 'node:fs/promises';

export const SEALING_KEY_BYTES = 32;

/** The file beside the stack file that holds the key, base64. */
export const SEALING_KEY_FILE_NAME = 'sealing-key';

export class SealingKeyError extends Error {
  override name = 'SealingKeyError';
  constructor(message: string) {
    super(message);
    this.stack = `${this.name}: ${message}`;
  }
}

export const newSealingKey = (): Buffer => randomBytes(SEALING_KEY_BYTES);

/**
 * Writes `key` to `path`, readable by the owner only. Any earlier file is
 * removed first, so the new one is created with mode 0600 whatever the umask
 * (then set again explicitly) and never inherits a looser mode.
 */
export async function writeSealingKey(path: string, key: Uint8Array): Promise<void> {
  await rm(path, { force: true });
  await writeFile(path, `${Buffer.from(key).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  await chmod(path, 0o600);
}

/** Reads the key `writeSealingKey` wrote. Messages name the file, never its content. */
export async function readSealingKey(path: string): Promise<Buffer> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new SealingKeyError(
      code === 'ENOENT'
        ? `the local stack's sealing key ${path} is missing: is the stack running? Restart it with npm start`
        : `cannot read the local stack's sealing key ${path} (${code})`,
    );
  }
  const key = Buffer.from(text.trim(), 'base64');
  if (key.length !== SEALING_KEY_BYTES) {
    throw new SealingKeyError(
      `${path} does not hold a ${SEALING_KEY_BYTES}-byte key: restart the local stack with npm start`,
    );
  }
  return key;
}
