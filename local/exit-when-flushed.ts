/**
 * How the local command lines (`npm run admin`, `npm run policy`) end: with
 * their exit code once stdout and stderr have handed everything written to
 * the OS. `process.exit()` alone drops what is still queued: a pipe takes
 * 64 KiB until its reader (`| jq`, `| wc`, `tvm status`) catches up, and a
 * `status` of a few hundred scopes or key jobs, or a policy check listing
 * every problem of a large document, is more.
 */
import type { Writable } from 'node:stream';

/** Resolves once everything written to `stream` so far was handed on, or the stream failed. */
function flushed(stream: Writable): Promise<void> {
  return new Promise((resolve) => {
    // A reader that went away (`| head`, `| true`) fails the write: nothing more
    // to wait for. Listened for before anything else: a write that already
    // failed (EPIPE) destroyed the stream and emits its error on the next tick,
    // which, unheard, would end the command with a stack trace and exit code 1.
    stream.on('error', () => resolve());
    if (stream.destroyed || !stream.writable) {
      resolve();
      return;
    }
    stream.write('', () => resolve());
  });
}

/** Exits with `code` once `streams` (default stdout and stderr) are flushed. */
export async function exitWhenFlushed(
  code: number,
  streams: readonly Writable[] = [process.stdout, process.stderr],
): Promise<never> {
  await Promise.all(streams.map(flushed));
  process.exit(code);
}
