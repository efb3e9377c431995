import { TokenVendingError } from './errors.js';
import type { VendAnswer } from './response.js';
import type { SignedRequest } from './signed-request.js';
import type { FetchFunction } from './types.js';

/**
 * Sends one signed request and reads the whole answer within `timeoutMs`.
 * Returns the raw answer whatever its status; throws a TokenVendingError
 * (`timeout` or `network_error`, status 0) only when there is none.
 */
export async function sendVendRequest(
  fetchImpl: FetchFunction,
  request: SignedRequest,
  timeoutMs: number,
): Promise<VendAnswer> {
  const signal = AbortSignal.timeout(timeoutMs);
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
    if (signal.aborted) {
      throw new TokenVendingError('timeout', `No answer from ${host} within ${timeoutMs} ms`, {
        status: 0,
        cause: error,
      });
    }
    throw new TokenVendingError('network_error', `Could not reach ${host}`, {
      status: 0,
      cause: error,
    });
  }
}
