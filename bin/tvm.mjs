#!/usr/bin/env node
// `tvm`: the token vending CLI (client/cli.ts). tsx compiles the TypeScript
// sources on the fly, so the command works right after `npm ci`, with no build.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../client/cli.ts');
process.exitCode = await main(process.argv.slice(2));
