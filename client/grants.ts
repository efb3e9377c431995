import { TokenVendingError } from './errors.js';
import { errorFromAnswer, type VendAnswer } from './response.js';
import type { Grants } from './types.js';

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Validates an answer to `GET /grants`: the Grants, or the TokenVendingError to throw. */
export function parseGrantsAnswer(answer: VendAnswer, nowMs: number): Grants {
  if (answer.status !== 200) throw errorFromAnswer(answer, nowMs);
  let json: unknown;
  try {
    json = JSON.parse(answer.body);
  } catch {
    json = undefined;
  }
  const scopes = isRecord(json) ? json.scopes : undefined;
  if (
    !isRecord(json) ||
    typeof json.principal !== 'string' ||
    !Array.isArray(scopes) ||
    !scopes.every((scope) => typeof scope === 'string') ||
    typeof json.unscoped !== 'boolean' ||
    (json.policy_version !== undefined && typeof json.policy_version !== 'string')
  ) {
    const requestId = answer.headers.get('x-amzn-requestid') ?? undefined;
    throw new TokenVendingError('invalid_response', 'Invalid grants answer', {
      status: answer.status,
      ...(requestId ? { requestId } : {}),
    });
  }
  return Object.freeze({
    principal: json.principal,
    scopes: Object.freeze([...(scopes as string[])]),
    unscoped: json.unscoped,
    ...(typeof json.policy_version === 'string' ? { policyVersion: json.policy_version } : {}),
  });
}
