/** Argument parsing the `tvm` commands share. */
import { parseArgs } from 'node:util';
import { UsageError } from './cli-error.js';
import { MAX_MIN_TTL, minTtlValue } from './vend-api.js';

type Options = NonNullable<Parameters<typeof parseArgs>[0]>['options'];

/** `parseArgs`, strict, positionals allowed; a parse failure is a usage error of `command`. */
export function parse<T extends Options>(
  args: readonly string[],
  options: T,
  command: string,
): ReturnType<
  typeof parseArgs<{ args: string[]; options: T; allowPositionals: true; strict: true }>
> {
  try {
    return parseArgs({ args: [...args], options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error), command);
  }
}

/** An argument shown in a message: one line, at most 40 characters. */
export function shown(value: string): string {
  const line = value.replace(/\s+/g, ' ');
  return line.length > 40 ? `${line.slice(0, 39)}…` : line;
}

/** `--min-ttl`: whole seconds, 0..3600; undefined when not given. */
export function parseMinTtl(value: string | undefined, command: string): number | undefined {
  if (value === undefined) return undefined;
  const seconds = minTtlValue(value);
  if (seconds === undefined) {
    throw new UsageError(`--min-ttl must be a whole number of seconds, 0..${MAX_MIN_TTL}`, command);
  }
  return seconds;
}

/** Throws a usage error naming the first positional argument, if any. */
export function noPositionals(positionals: readonly string[], command: string): void {
  if (positionals[0] !== undefined) {
    throw new UsageError(`unexpected argument '${shown(positionals[0])}'`, command);
  }
}
