import { randomUUID } from 'node:crypto';
import { chmod, mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { assertBusinessApplicationId } from '../issue-keys/business-application-id.js';
import { KeyVaultError, KeyVaultUnavailableError } from '../issue-keys/errors.js';
import type { KeyVault } from '../issue-keys/ports.js';

/**
 * The local stack's stand-in for Secrets Manager: the provider's answer, whole,
 * in `<root>/basic-auth/<id>` (root = `LOCAL_SECRETS_DIR`, default
 * `.local/secrets`). Written atomically: a mode 0600 temporary file in the same
 * directory, flushed, then renamed over the old one, so a reader sees the old
 * keys or the new ones, never a part. The directory is mode 0700.
 *
 * The id is checked against the scope pattern: it starts with a letter or digit
 * and holds no `/`, so it is one plain file name (never `.` or `..`).
 */
export class FileKeyVault implements KeyVault {
  readonly #dir: string;

  constructor(root: string) {
    this.#dir = join(resolve(root), 'basic-auth');
  }

  locationOf(id: string): string {
    assertBusinessApplicationId(id);
    return join(this.#dir, id);
  }

  async has(id: string): Promise<boolean> {
    let isFile: boolean;
    try {
      isFile = (await stat(this.locationOf(id))).isFile();
    } catch (error) {
      const code = (error as NodeJS.ErrnoException | undefined)?.code ?? 'unknown';
      if (code === 'ENOENT') return false;
      throw new KeyVaultUnavailableError(`Reading the keys file of ${id} failed (${code})`, {
        cause: error,
      });
    }
    // Something else at that path: writing the keys there would fail.
    if (!isFile) throw new KeyVaultUnavailableError(`The keys path of ${id} is not a file`);
    return true;
  }

  async put(
    id: string,
    body: Uint8Array,
    version: string,
  ): Promise<{ location: string; version: string }> {
    const target = this.locationOf(id);
    const temp = join(this.#dir, `.${id}.${randomUUID()}.tmp`);
    try {
      await mkdir(this.#dir, { recursive: true, mode: 0o700 });
      await chmod(this.#dir, 0o700);
      const file = await open(temp, 'wx', 0o600);
      try {
        await file.chmod(0o600); // whatever the umask
        await file.writeFile(body);
        await file.sync();
      } finally {
        await file.close();
      }
      await rename(temp, target);
    } catch (error) {
      await rm(temp, { force: true }).catch(() => undefined);
      const code = (error as NodeJS.ErrnoException | undefined)?.code ?? 'unknown';
      throw new KeyVaultError(`Writing the keys file for ${id} failed (${code})`, {
        cause: error,
      });
    }
    return { location: target, version };
  }
}
