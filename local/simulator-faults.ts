/**
 * Provider simulator fault injection: the faults a test can queue for the token and the
 * key-issuing endpoints, the FIFO queue they wait in, and the reply a status fault sends.
 * Applying a fault to a request (delay, hang, reset, drop) is the server's job.
 */
import type { OutgoingHttpHeaders } from 'node:http';
import type { Reply } from './simulator-http.js';

/** The faults both endpoints take. */
type EndpointFault =
  | { kind: 'latency'; ms: number }
  | { kind: 'status'; status: number; retryAfter?: number; body?: unknown }
  | { kind: 'malformed' }
  | { kind: 'hang' }
  /** The connection is reset (TCP RST) before any answer: the client sees a network error. */
  | { kind: 'reset' };

export type TokenFault =
  | EndpointFault
  | { kind: 'wrongScope' }
  | { kind: 'wrongTokenType' }
  | { kind: 'missingExpiresIn' }
  | { kind: 'expiresIn'; value: number };

export type KeysFault =
  | EndpointFault
  /**
   * The request is processed in full (keys issued, idempotency record kept), then the
   * connection is destroyed before any answer: the client sees a network error after
   * the provider committed.
   */
  | { kind: 'dropAfterCommit' };

export interface QueuedFault<F> {
  fault: F;
  remaining: number;
}

function defaultFaultError(status: number): string {
  if (status === 401) return 'invalid_client';
  if (status === 429) return 'too_many_requests';
  if (status === 503) return 'temporarily_unavailable';
  if (status >= 500) return 'server_error';
  return 'invalid_request';
}

export function statusFaultReply(fault: {
  status: number;
  retryAfter?: number;
  body?: unknown;
}): Reply {
  const headers: OutgoingHttpHeaders = {};
  if (fault.retryAfter !== undefined) headers['retry-after'] = String(fault.retryAfter);
  if (fault.status === 401) headers['www-authenticate'] = 'Basic realm="provider"';
  if (typeof fault.body === 'string') headers['content-type'] = 'text/plain; charset=utf-8';
  const body = fault.body ?? {
    error: defaultFaultError(fault.status),
    error_description: 'injected fault',
  };
  return { status: fault.status, body, headers };
}

export function takeFault<F>(queue: QueuedFault<F>[]): F | undefined {
  const head = queue[0];
  if (!head) return undefined;
  head.remaining -= 1;
  if (head.remaining <= 0) queue.shift();
  return head.fault;
}

/** A pending fault as the control endpoint lists it: what it does and how many requests it has left. */
export interface PendingFault<F> {
  fault: F;
  /** Requests it still applies to; `unlimited` for one queued with times Infinity. */
  remaining: number | 'unlimited';
}

/** The queue in the order its faults apply (the first one applies to the next request). */
export function pendingFaults<F>(queue: readonly QueuedFault<F>[]): PendingFault<F>[] {
  return queue.map(({ fault, remaining }) => ({
    fault: structuredClone(fault),
    remaining: remaining === Number.POSITIVE_INFINITY ? 'unlimited' : remaining,
  }));
}

export function queueFault<F>(queue: QueuedFault<F>[], fault: F, times: number): void {
  if (!(times > 0) || (!Number.isInteger(times) && times !== Number.POSITIVE_INFINITY)) {
    throw new RangeError(`times must be a positive integer or Infinity, got ${times}`);
  }
  queue.push({ fault: structuredClone(fault), remaining: times });
}
