import { mkdir, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FileKeyVault } from '../../functions/adapters/file-key-vault.js';
import { KeyVaultError, KeyVaultUnavailableError } from '../../functions/issue-keys/errors.js';
import { rejection } from '../support/rejection.js';

// rename is wrapped so a test can hold the write between the temp file and the swap.
vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs/promises')>();
  return { ...actual, rename: vi.fn(actual.rename) };
});

const bytes = (text: string) => new TextEncoder().encode(text);
let root: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'key-vault-'));
});
afterEach(async () => {
  vi.mocked(rename).mockClear();
  await rm(root, { recursive: true, force: true });
});

describe('FileKeyVault', () => {
  it('writes <root>/basic-auth/<id> byte for byte, mode 0600 in a 0700 directory', async () => {
    // Prepare
    const vault = new FileKeyVault(root);
    const body = bytes('{"key":"k","secret":"s\u00e9"}\n');

    // Act
    const stored = await vault.put('ba:demo.1', body, 'version-1');

    // Assess
    const path = join(root, 'basic-auth', 'ba:demo.1');
    expect(stored).toEqual({ location: path, version: 'version-1' });
    expect(new Uint8Array(await readFile(path))).toEqual(body);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect((await stat(join(root, 'basic-auth'))).mode & 0o777).toBe(0o700);
    expect(await readdir(join(root, 'basic-auth'))).toEqual(['ba:demo.1']);
  });

  it('keeps mode 0600 whatever the umask, and on an existing file', async () => {
    // Prepare
    const vault = new FileKeyVault(root);
    await vault.put('ba_1', bytes('old'), 'v1');
    const previous = process.umask(0o000);

    // Act
    try {
      await vault.put('ba_1', bytes('new'), 'v2');
    } finally {
      process.umask(previous);
    }

    // Assess
    const path = join(root, 'basic-auth', 'ba_1');
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(await readFile(path, 'utf8')).toBe('new');
  });

  it('is atomic: until the rename, readers see the old keys; the new ones appear whole', async () => {
    // Prepare
    const vault = new FileKeyVault(root);
    await vault.put('ba_1', bytes('old keys'), 'v1');
    const path = join(root, 'basic-auth', 'ba_1');
    const actual = await vi.importActual<typeof import('node:fs/promises')>('node:fs/promises');
    const seen: string[] = [];
    vi.mocked(rename).mockImplementationOnce(async (from, to) => {
      seen.push(await readFile(path, 'utf8'));
      seen.push(await readFile(from, 'utf8'));
      seen.push(((await stat(from)).mode & 0o777).toString(8));
      await actual.rename(from, to);
    });

    // Act
    await vault.put('ba_1', bytes('new keys'), 'v2');

    // Assess
    expect(seen).toEqual(['old keys', 'new keys', '600']);
    expect(await readFile(path, 'utf8')).toBe('new keys');
    expect(await readdir(join(root, 'basic-auth'))).toEqual(['ba_1']);
  });

  it('a failed swap leaves the old keys and no temporary file, as store_failed', async () => {
    // Prepare
    const vault = new FileKeyVault(root);
    await vault.put('ba_1', bytes('old keys'), 'v1');
    vi.mocked(rename).mockRejectedValueOnce(
      Object.assign(new Error('cross-device link'), { code: 'EXDEV' }),
    );

    // Act
    const error = await vault.put('ba_1', bytes('new keys'), 'v2').catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(KeyVaultError);
    expect(error).toMatchObject({ code: 'store_failed', name: 'KeyVaultError' });
    expect((error as Error).message).not.toContain('new keys');
    expect(await readFile(join(root, 'basic-auth', 'ba_1'), 'utf8')).toBe('old keys');
    expect(await readdir(join(root, 'basic-auth'))).toEqual(['ba_1']);
  });

  it('concurrent puts leave one whole answer', async () => {
    // Prepare
    const vault = new FileKeyVault(root);
    const bodies = Array.from({ length: 20 }, (_, i) => `answer-${i}-${'x'.repeat(10_000)}`);

    // Act
    await Promise.all(bodies.map((b, i) => vault.put('ba_1', bytes(b), `v${i}`)));

    // Assess
    expect(bodies).toContain(await readFile(join(root, 'basic-auth', 'ba_1'), 'utf8'));
    expect(await readdir(join(root, 'basic-auth'))).toEqual(['ba_1']);
  });

  it('refuses ids outside the scope pattern, so no path can leave the directory', async () => {
    // Prepare
    const vault = new FileKeyVault(root);
    await writeFile(join(root, 'outside'), 'untouched');

    // Act
    const results = await Promise.all(
      ['..', '../outside', '.hidden', 'a/b', '', 'a\u0000b'].map((id) =>
        vault.put(id, bytes('x'), 'v').then(
          () => 'written',
          (e: unknown) => (e as { code?: string }).code,
        ),
      ),
    );

    // Assess
    expect(results).toEqual(Array(6).fill('invalid_request'));
    expect(await readFile(join(root, 'outside'), 'utf8')).toBe('untouched');
  });
});

describe('FileKeyVault.has', () => {
  it('says keys are stored once their file exists', async () => {
    const vault = new FileKeyVault(root);

    const before = await vault.has('ba_1');
    await vault.put('ba_1', bytes('{"key":"k"}'), 'v1');

    expect(before).toBe(false);
    expect(await vault.has('ba_1')).toBe(true);
    expect(await vault.has('ba_2')).toBe(false);
  });

  it('cannot say, rather than say no, when the path cannot be read or is no file', async () => {
    // A file where the directory should be (ENOTDIR), and a directory where a keys file should be.
    await writeFile(join(root, 'basic-auth'), 'not a directory');
    const blocked = new FileKeyVault(root);
    const other = await mkdtemp(join(tmpdir(), 'key-vault-'));
    const vault = new FileKeyVault(other);
    await vault.put('ba_1', bytes('{}'), 'v1');
    await rm(join(other, 'basic-auth', 'ba_1'));
    await mkdir(join(other, 'basic-auth', 'ba_1'));

    try {
      // Each check starts only once the one before is handled: a second check
      // started up front could reject while the first is awaited, unhandled.
      for (const check of [() => blocked.has('ba_1'), () => vault.has('ba_1')]) {
        await rejection(check(), KeyVaultUnavailableError);
      }
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });
});
