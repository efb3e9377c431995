/** An error the CLI reports as `tvm: <code>: <title>` and exits with `exitCode`. */
export class CliError extends Error {
  override name: string = 'CliError';
  readonly code: string;
  readonly title: string;
  readonly exitCode: 1 | 2;

  constructor(code: string, title: string, exitCode: 1 | 2 = 1, options?: { cause?: unknown }) {
    super(`${code}: ${title}`, options);
    this.code = code;
    this.title = title;
    this.exitCode = exitCode;
  }
}

/** Bad arguments: exit code 2. */
export class UsageError extends CliError {
  override name = 'UsageError';
  readonly command: string | undefined;

  constructor(title: string, command?: string) {
    super('usage', title, 2);
    this.command = command;
  }
}

/** An unexpected error as tvm names it: its name and code, never its message. */
export function unexpected(error: unknown): string {
  if (!(error instanceof Error)) return typeof error;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && /^[A-Za-z0-9_]{1,64}$/.test(code)
    ? `${error.name} (${code})`
    : error.name;
}
