/**
 * Options for an AWS SDK client whose calls must end: a hung call must not
 * hold a vend (or a job) until the Lambda timeout, and a DynamoDB that stops
 * answering must turn into degraded service, not into hung vends.
 *
 * - `throwOnRequestTimeout`: in `@smithy/node-http-handler` 4.x a breach of
 *   `requestTimeout` is only logged as a warning unless this is set ("Because
 *   requestTimeout was for a long time incorrectly being set as a socket idle
 *   timeout, users must also opt-in for request timeout thrown errors",
 *   `NodeHttpHandlerOptions` in `@smithy/types`).
 * - `socketTimeout`: that timer stops once the response headers arrive; a
 *   body that stalls after them is ended only by a socket idle timeout
 *   (the SDK's default is 300 s), set here to the same bound.
 */
export function boundedCalls(limits: {
  /** Each attempt, milliseconds. */
  readonly requestTimeoutMs: number;
  /** Opening a connection, milliseconds. Default 500. */
  readonly connectionTimeoutMs?: number;
  /** Attempts in all (the SDK's default is 3). */
  readonly maxAttempts?: number;
}) {
  return {
    ...(limits.maxAttempts === undefined ? {} : { maxAttempts: limits.maxAttempts }),
    requestHandler: {
      requestTimeout: limits.requestTimeoutMs,
      connectionTimeout: limits.connectionTimeoutMs ?? 500,
      throwOnRequestTimeout: true,
      socketTimeout: limits.requestTimeoutMs,
    },
  };
}

/**
 * The vend (and refresh) function's DynamoDB and KMS calls: 1 s an attempt, 2
 * attempts, then degraded mode. The local stack's vend instances use the same,
 * so a local table that stops answering shows what AWS would do.
 */
export const VEND_CALL_LIMITS = { requestTimeoutMs: 1000, maxAttempts: 2 } as const;
