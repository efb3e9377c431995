/**
 * Provider simulator counters and the secret-free request log.
 */
import type { KeysFault, TokenFault } from './simulator-faults.js';

const MAX_RECORDED = 10_000;

export interface SimulatorStats {
  tokenRequests: number;
  tokensIssued: number;
  keyRequests: number;
  keysIssued: number;
  /** Token requests with a parseable form body, by requested scope; unscoped under ''. */
  tokenRequestsByScope: Record<string, number>;
}

/** One received request. Never holds the Authorization header, tokens, keys or secrets. */
export interface RecordedRequest {
  readonly method: string;
  /** Path without query string. */
  readonly path: string;
  readonly endpoint: 'token' | 'keys' | 'other';
  /** Requested scope on token requests: '' when sent empty, absent when not sent. */
  readonly scope?: string;
  /** Response status; 0 when never answered (hang fault, client gone). */
  readonly status: number;
  readonly idempotencyKey?: string;
  /** Kind of the injected fault that this request consumed, if any. */
  readonly fault?: TokenFault['kind'] | KeysFault['kind'];
  /** Arrival time, ms, from the simulator clock. */
  readonly time: number;
}

export function emptyStats(): SimulatorStats {
  return {
    tokenRequests: 0,
    tokensIssued: 0,
    keyRequests: 0,
    keysIssued: 0,
    tokenRequestsByScope: {},
  };
}

/** Appends to the log, dropping the oldest entry once it holds MAX_RECORDED. */
export function record(recorded: RecordedRequest[], entry: RecordedRequest): void {
  if (recorded.length >= MAX_RECORDED) recorded.shift();
  recorded.push(Object.freeze(entry));
}
