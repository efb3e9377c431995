import type { ClientClock, FetchFunction } from './types.js';

/** What a `tvm` command runs with: passed in, so that tests run commands in-process. */
export interface CliIo {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown };
  /** Default: the global fetch. */
  readonly fetch?: FetchFunction;
  /** Default: real time. */
  readonly clock?: ClientClock;
  /**
   * Stops a long-running command (`tvm agent`) when aborted. Default: the
   * process's SIGINT and SIGTERM.
   */
  readonly signal?: AbortSignal;
}
