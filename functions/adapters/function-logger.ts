import { Logger } from '@aws-lambda-powertools/logger';
import { mapStack } from './source-mapped-stack.js';

/** Errors whose stacks were mapped already (an error may be logged twice). */
const mapped = new WeakSet<Error>();

/**
 * Points a logged error's stack, and its causes' stacks, at the TypeScript
 * sources (source-mapped-stack.ts). Powertools calls it on every value it
 * writes, before it formats errors; it reads `stack` and `cause` itself.
 */
function sourceMappedErrors(_key: string, value: unknown): unknown {
  let error: unknown = value;
  for (let depth = 0; error instanceof Error && depth < 8 && !mapped.has(error); depth++) {
    mapped.add(error);
    try {
      if (typeof error.stack === 'string') error.stack = mapStack(error.stack);
    } catch {
      // Logging an error must not fail on its stack: it is written as it was.
    }
    error = error.cause;
  }
  return value;
}

/** The functions' logger: Powertools' JSON lines, errors' stacks mapped to the sources. */
export function createFunctionLogger(): Logger {
  return new Logger({ serviceName: 'token-vending', jsonReplacerFn: sourceMappedErrors });
}
