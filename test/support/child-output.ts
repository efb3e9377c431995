import type { ChildProcess } from 'node:child_process';

/** What a child process printed, and how it ended (null while it runs, or when a signal ended it). */
export interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Collects a spawned child's stdout and stderr: as far as it got (`output`), and once it closes (`done`). */
export function childOutput(child: ChildProcess): { output: () => Run; done: Promise<Run> } {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => {
    stdout += d;
  });
  child.stderr?.on('data', (d) => {
    stderr += d;
  });
  const output = () => ({ code: child.exitCode, stdout, stderr });
  const done = new Promise<Run>((settle) =>
    child.once('close', (code) => settle({ code, stdout, stderr })),
  );
  return { output, done };
}
