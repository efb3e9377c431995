import { runAdminCli } from './admin-cli.js';

// `npm run admin -- '<event json>'`: one admin event against the running local stack.
const code = await runAdminCli(process.argv.slice(2), {
  env: process.env,
  cwd: process.cwd(),
  stdout: process.stdout,
  stderr: process.stderr,
});
// Writes to pipes and files are synchronous on Linux and macOS: nothing is lost.
process.exit(code);
