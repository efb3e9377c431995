import type { ProblemCode } from './vend-api.js';

/**
 * Codes a `TokenVendingError` carries. The first nine are the vend API's own
 * (docs/vend-api.md, from its problem+json body); the rest are the client's:
 *
 * - `throttled`: HTTP 429 without a problem body (Lambda throttled the function);
 * - `unexpected_response`: any other status without a problem body;
 * - `invalid_response`: a 200 whose body is not a valid token answer;
 * - `timeout`: no complete answer within `timeoutMs` (status 0);
 * - `network_error`: the URL could not be reached (status 0);
 * - `credentials_unavailable`: no AWS credentials to sign with, or none a header can carry (status 0);
 * - `invalid_config`: bad client options (status 0).
 */
export type TokenVendingErrorCode =
  | ProblemCode
  | 'throttled'
  | 'unexpected_response'
  | 'invalid_response'
  | 'timeout'
  | 'network_error'
  | 'credentials_unavailable'
  | 'invalid_config';

export interface TokenVendingErrorDetails {
  /** HTTP status of the answer; 0 when there was none. */
  readonly status: number;
  /** The problem's `detail`, when the vend API sent one (never holds a token). */
  readonly detail?: string;
  /** Seconds the server asked to wait (`Retry-After`). */
  readonly retryAfter?: number;
  /** The answer's `x-amzn-RequestId`, for support. */
  readonly requestId?: string;
  readonly cause?: unknown;
}

/**
 * The one error the client throws. Its message is `<code>: <title>` and never
 * contains a token, a signature or a response body.
 */
export class TokenVendingError extends Error {
  override name = 'TokenVendingError' as const;
  readonly code: TokenVendingErrorCode;
  readonly status: number;
  readonly title: string;
  readonly detail?: string;
  readonly retryAfter?: number;
  readonly requestId?: string;

  constructor(code: TokenVendingErrorCode, title: string, details: TokenVendingErrorDetails) {
    super(`${code}: ${title}`, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    this.status = details.status;
    this.title = title;
    if (details.detail !== undefined) this.detail = details.detail;
    if (details.retryAfter !== undefined) this.retryAfter = details.retryAfter;
    if (details.requestId !== undefined) this.requestId = details.requestId;
  }
}
