import { createHash } from 'node:crypto';

/** First 16 hex digits of the token's SHA-256: traceable in logs, useless to a thief. */
export const fingerprint = (token: string): string =>
  createHash('sha256').update(token, 'utf8').digest('hex').slice(0, 16);
