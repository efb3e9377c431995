import { StoreUnavailableError } from './errors.js';

/** An error's name and code for logs; never its message, which could quote a response. */
export function describe(error: unknown): Record<string, unknown> {
  if (error instanceof StoreUnavailableError) return { name: error.name, message: error.message };
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return { name: error.name, ...(typeof code === 'string' ? { code } : {}) };
  }
  return { name: typeof error };
}
