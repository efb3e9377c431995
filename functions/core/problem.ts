import type { LambdaFunctionURLResult } from 'aws-lambda';
import {
  InternalError,
  MethodNotAllowedError,
  UpstreamUnavailableError,
  type VendError,
} from './errors.js';

const NO_STORE = 'no-store';

export function jsonResponse(status: number, body: unknown): LambdaFunctionURLResult {
  return {
    statusCode: status,
    headers: { 'content-type': 'application/json', 'cache-control': NO_STORE },
    body: JSON.stringify(body),
  };
}

/** An `application/problem+json` response; `detail` comes from our own error messages only. */
export function problemResponse(error: VendError): LambdaFunctionURLResult {
  const headers: Record<string, string> = {
    'content-type': 'application/problem+json',
    'cache-control': NO_STORE,
  };
  if (error instanceof MethodNotAllowedError) headers.allow = error.allow;
  if (error instanceof UpstreamUnavailableError) headers['retry-after'] = String(error.retryAfter);
  const detail = error instanceof InternalError ? 'An internal error occurred.' : error.message;
  return {
    statusCode: error.status,
    headers,
    body: JSON.stringify({ status: error.status, code: error.code, title: error.title, detail }),
  };
}
