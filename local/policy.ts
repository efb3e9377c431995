import { exitWhenFlushed } from './exit-when-flushed.js';
import { runPolicyCli } from './policy-cli.js';

// `npm run policy -- validate <file>`: the functions' own check of a policy document.
const code = await runPolicyCli(process.argv.slice(2), {
  cwd: process.cwd(),
  stdout: process.stdout,
  stderr: process.stderr,
});
// Not process.exit() at once: a long list of problems still queued for a pipe would be lost.
await exitWhenFlushed(code);
