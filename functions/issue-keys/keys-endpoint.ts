/**
 * The provider's key-issuing endpoint (docs/provider-gaps.md has what its document leaves open):
 * one function sends the request and returns the raw response, another reads
 * it into issued keys or a KeysEndpointError. Error bodies are never read.
 */
import { readLimited } from '../core/read-limited.js';
import { retryAfterSecondsOf } from '../core/retry-after.js';
import { KeysEndpointError } from './errors.js';

/** Secrets Manager holds at most 65 536 bytes of secret value. */
export const MAX_KEYS_RESPONSE_BYTES = 65_536;

export interface KeysRequest {
  readonly baseUrl: string;
  readonly businessApplicationId: string;
  readonly accessToken: string;
  readonly idempotencyKey: string;
  /** JSON text sent as the body (`KEY_ISSUE_REQUEST_BODY`); absent: no body. */
  readonly body?: string;
}

/** A 2xx answer: the body exactly as received. */
export interface IssuedKeys {
  readonly status: number;
  readonly body: Uint8Array;
}

export function keysUrl(baseUrl: string, businessApplicationId: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/partner/v1/basic_auth/business_applications/${encodeURIComponent(businessApplicationId)}/keys`;
}

/**
 * Sends one key-issuing request. A redirect is never followed (the token would
 * go with it); `manual`, not `error`, so it is answered as an unexpected
 * status (`upstream_error`), not retried as if the endpoint were unreachable.
 */
export function sendKeysRequest(
  fetchImpl: typeof fetch,
  request: KeysRequest,
  signal: AbortSignal,
): Promise<Response> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${request.accessToken}`,
    'idempotency-key': request.idempotencyKey,
    accept: 'application/json',
  };
  if (request.body !== undefined) headers['content-type'] = 'application/json';
  return fetchImpl(keysUrl(request.baseUrl, request.businessApplicationId), {
    method: 'POST',
    headers,
    ...(request.body === undefined ? {} : { body: request.body }),
    signal,
    redirect: 'manual',
  });
}

/** A network failure, timeout or body cut short: retryable with the same key. */
export function unavailable(error: unknown): KeysEndpointError {
  const timedOut = error instanceof Error && error.name === 'TimeoutError';
  return new KeysEndpointError(
    'upstream_unavailable',
    timedOut
      ? 'The keys endpoint did not answer in time.'
      : 'The keys endpoint could not be reached.',
    { status: 0, retryable: true, cause: error },
  );
}

/**
 * Any 2xx is success (the document shows no status; a provider may answer 201):
 * the body is returned byte for byte, never parsed. Otherwise throws:
 * 401 (status 401; the caller refreshes its token once), 403 `feature_not_enabled`,
 * 404 `business_application_not_found`, 429 / 5xx `upstream_unavailable` (retryable),
 * anything else `upstream_error`.
 */
export async function readKeysResponse(response: Response, nowMs: number): Promise<IssuedKeys> {
  const { status } = response;
  if (status >= 200 && status < 300) {
    let body: Uint8Array | undefined;
    try {
      body = await readLimited(response, MAX_KEYS_RESPONSE_BYTES);
    } catch (error) {
      throw unavailable(error);
    }
    if (body === undefined) {
      throw new KeysEndpointError(
        'upstream_error',
        `The keys endpoint answered HTTP ${status} with more than ${MAX_KEYS_RESPONSE_BYTES} bytes.`,
        { status, retryable: false },
      );
    }
    if (body.byteLength === 0) {
      throw new KeysEndpointError(
        'upstream_error',
        `The keys endpoint answered HTTP ${status} with an empty body: nothing to store.`,
        { status, retryable: false },
      );
    }
    return { status, body };
  }
  // Error bodies are never read (they could echo what we sent); free the socket.
  await response.body?.cancel().catch(() => undefined);
  const retryAfter = retryAfterSecondsOf(response.headers.get('retry-after'), nowMs);
  const fail = (code: ConstructorParameters<typeof KeysEndpointError>[0], message: string) =>
    new KeysEndpointError(code, message, { status, retryable: false });
  switch (status) {
    case 401:
      throw fail('token_rejected', 'The keys endpoint rejected the unscoped token (HTTP 401).');
    case 403:
      throw fail(
        'feature_not_enabled',
        'The keys endpoint answered HTTP 403: key issuing is not enabled for the partner (ask the provider\u2019s customer success team).',
      );
    case 404:
      throw fail(
        'business_application_not_found',
        'The keys endpoint answered HTTP 404: the provider does not know this business application.',
      );
    default:
      if (status === 429 || status >= 500) {
        throw new KeysEndpointError(
          'upstream_unavailable',
          `The keys endpoint answered HTTP ${status}.`,
          { status, retryable: true, ...(retryAfter === undefined ? {} : { retryAfter }) },
        );
      }
      throw fail('upstream_error', `The keys endpoint answered HTTP ${status}.`);
  }
}
