#!/usr/bin/env node
/** The `tvm` command: runs `run` (cli.ts) with this process's arguments, environment and streams. */
import { run } from './cli.js';

process.exitCode = await run(process.argv.slice(2));
