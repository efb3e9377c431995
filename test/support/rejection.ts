import { expect } from 'vitest';

/** The error `promise` rejects with, checked to be a `type`. */
export async function rejection<T>(
  promise: Promise<unknown>,
  type: new (...args: never[]) => T,
): Promise<T> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(type);
  return error as T;
}
