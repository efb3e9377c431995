import { runAdminCli } from './admin-cli.js';
import { exitWhenFlushed } from './exit-when-flushed.js';

// `npm run admin -- '<event json>'`: one admin event against the running local stack.
const code = await runAdminCli(process.argv.slice(2), {
  env: process.env,
  cwd: process.cwd(),
  stdout: process.stdout,
  stderr: process.stderr,
});
// Not process.exit() at once: output still queued for a pipe would be lost.
await exitWhenFlushed(code);
