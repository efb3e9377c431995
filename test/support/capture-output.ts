import { vi } from 'vitest';

/**
 * Captures everything written to stdout and stderr, where Powertools writes
 * logs and EMF metrics, until `restore`. For the no-leak tests.
 */
export function captureOutput(): { text(): string; restore(): void } {
  const output: string[] = [];
  const capture = (chunk: unknown) => {
    output.push(
      typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8'),
    );
    return true;
  };
  const out = vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  return {
    text: () => output.join(''),
    restore() {
      out.mockRestore();
      err.mockRestore();
    },
  };
}
