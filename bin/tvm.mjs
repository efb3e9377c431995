#!/usr/bin/env node
// `tvm` in this repository (`npx tvm`, `node bin/tvm.mjs`): runs the client
// package's built CLI, client/dist, with plain node, as an installed `tvm` does.
// `npm ci` builds it (the root `prepare` script), and so does every test run;
// after editing client/*.ts, `npm run build -w client` rebuilds it.
import { readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const cli = new URL('../client/dist/cli.js', import.meta.url);
const client = fileURLToPath(new URL('../client/', import.meta.url));
const built = fileURLToPath(cli);

/** Milliseconds since the epoch of the last change to `path`; undefined when it is missing. */
const changed = (path) => statSync(path, { throwIfNoEntry: false })?.mtimeMs;

const builtAt = changed(built);
if (builtAt === undefined) {
  process.stderr.write(
    'tvm: not_built: client/dist is missing (install scripts did not run?): run npm run build -w client\n',
  );
  process.exit(1);
}
const sources = readdirSync(client).filter((name) => name.endsWith('.ts'));
if (sources.some((name) => (changed(`${client}${name}`) ?? 0) > builtAt)) {
  process.stderr.write(
    'tvm: warning: client/*.ts changed after client/dist was built: run npm run build -w client\n',
  );
}

// `run` since the build that added it; a client/dist built before has only `main`.
const { run, main } = await import(cli.href);
process.exitCode = await (run ?? main)(process.argv.slice(2));
