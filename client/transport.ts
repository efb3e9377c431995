import { TokenVendingError } from './errors.js';
import type { VendAnswer } from './response.js';
import type { SignedRequest } from './signed-request.js';
import type { FetchFunction } from './types.js';

/**
 * Sends one signed request and reads the whole answer, aborted by `signal`.
 * Returns the raw answer whatever its status; throws a TokenVendingError
 * (`network_error`, status 0) only when there is none. The caller's deadline
 * reports timeouts.
 */
export async function sendVendRequest(
  fetchImpl: FetchFunction,
  request: SignedRequest,
  signal: AbortSignal,
): Promise<VendAnswer> {
  try {
    const response = await fetchImpl(request.url, {
      method: 'GET',
      headers: request.headers,
      redirect: 'manual',
      signal,
    });
    const body = await response.text();
    return { status: response.status, headers: response.headers, body };
  } catch (error) {
    const host = new URL(request.url).host;
    throw new TokenVendingError('network_error', `Could not reach ${host}`, {
      status: 0,
      cause: error,
    });
  }
}

/**
 * Runs `work` under one deadline: when `timeoutMs` passes first, aborts its
 * signal and rejects with `timeout`, even if `work` ignores the signal (a
 * custom fetch, a stalled body, a hung credential provider).
 */
export async function withDeadline<T>(
  timeoutMs: number,
  what: string,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(
        new TokenVendingError('timeout', `No answer from ${what} within ${timeoutMs} ms`, {
          status: 0,
        }),
      );
    }, timeoutMs);
  });
  const running = work(controller.signal);
  running.catch(() => undefined); // a late failure after the deadline is not unhandled
  try {
    return await Promise.race([running, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
