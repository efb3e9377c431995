import { InvalidKeyIssuingRequestError } from './errors.js';

/**
 * The vend API's scope syntax, which business application ids share. It starts
 * with a letter or digit and holds no `/`, so an id is a safe path segment and a
 * safe file name (never `.` or `..`).
 */
export const BUSINESS_APPLICATION_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

export function isBusinessApplicationId(id: string): boolean {
  return BUSINESS_APPLICATION_ID_PATTERN.test(id);
}

/** @throws InvalidKeyIssuingRequestError when `id` does not match the pattern. */
export function assertBusinessApplicationId(id: string): void {
  if (!isBusinessApplicationId(id)) {
    throw new InvalidKeyIssuingRequestError(
      `business application id ${JSON.stringify(id.slice(0, 140))} must match ${BUSINESS_APPLICATION_ID_PATTERN.source}`,
    );
  }
}

/** Item key of an id's job record; the token cache's items start with `TOKEN#`. */
export const keyJobKey = (id: string): string => `KEYS#${id}`;
