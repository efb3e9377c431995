#!/usr/bin/env node
/** The `tvm` command: runs `main` (cli.ts) with this process's arguments, environment and streams. */
import { main } from './cli.js';

process.exitCode = await main(process.argv.slice(2));
