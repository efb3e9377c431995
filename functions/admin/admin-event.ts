import { SCOPE_PATTERN } from '../core/access-policy.js';
import { StoreUnavailableError, VendError } from '../core/errors.js';
import { UNSCOPED_LABEL } from '../core/item-keys.js';
import { failureCode } from '../core/refresh-failure.js';
import { KeyIssuingError, KeyIssuingFailedError } from '../issue-keys/errors.js';
import {
  type ClearPendingKeyRequest,
  clearPendingKeyProblems,
  MAX_REASON_LENGTH,
  parseClearPendingKeyEvent,
} from '../issue-keys/event.js';

/** In admin events, this scope name stands for the unscoped (partner) token. */
export const UNSCOPED = UNSCOPED_LABEL;

/** Every valid event, for error messages and usage (docs/operations.md lists them too). */
export const ADMIN_EVENTS = [
  '{"action":"status"}',
  '{"action":"invalidate","scope":"<scope>|unscoped"}',
  '{"action":"invalidate","all":true} (or the short form {"all":true})',
  '{"action":"refresh","scope":"<scope>|unscoped"}',
  '{"action":"issue-keys","businessApplicationIds":["<id>",...],"force":true,"forceId":"<id>"} (all optional; force needs ids, forceId needs force)',
  `{"action":"clear-pending-key","businessApplicationId":"<id>","reason":"<why: 1..${MAX_REASON_LENGTH} characters>"} (after the provider confirmed nothing was issued under the pending key)`,
] as const;

/** A parsed admin event; `scope` undefined means the unscoped token. */
export type AdminEvent =
  | { readonly action: 'status' }
  | { readonly action: 'invalidate'; readonly all: true }
  | { readonly action: 'invalidate'; readonly all: false; readonly scope: string | undefined }
  | { readonly action: 'refresh'; readonly scope: string | undefined }
  | { readonly action: 'issue-keys'; readonly event: Record<string, unknown> }
  | { readonly action: 'clear-pending-key'; readonly request: ClearPendingKeyRequest };

/** `<code>: <message>`, whether or not the message starts with the code already (some key-job errors do). */
export const withCode = (code: string, message: string): string =>
  message.startsWith(`${code}:`) ? message : `${code}: ${message}`;

/** An admin request that failed; `code` is machine-readable and starts the message. */
export class AdminError extends Error {
  override name = 'AdminError';
  readonly code: string;
  constructor(code: string, detail: string, options?: { cause?: unknown }) {
    super(withCode(code, detail), options);
    this.code = code;
    // Operators see the message, never a stack trace.
    this.stack = `${this.name}: ${this.message}`;
  }
}

/**
 * An action another of our functions (refresh, issue-keys) failed, with the
 * code it failed with. That function's own Errors metric and alarms judge the
 * failure, so the admin counts it as `InvokedFunctionFailures` and its
 * admin-errors alarm leaves it out: one fault, one page.
 */
export class InvokedFunctionError extends AdminError {
  readonly functionName: string;
  constructor(functionName: string, code: string, detail: string) {
    super(code, detail);
    this.functionName = functionName;
  }
}

/**
 * An error with a machine-readable code as an admin error with that code, so
 * the message starts with it: a vend-path error (a vend API code), a cache
 * that failed (`store_unavailable`, `sealer_unavailable`), or the key-issuing
 * job's own (`job_store_unavailable`, ...). A failed key run stays as it is:
 * it carries the run's result. Others unchanged.
 */
export function asAdminError(error: unknown): unknown {
  if (error instanceof VendError || error instanceof StoreUnavailableError) {
    return new AdminError(failureCode(error), error.message, { cause: error });
  }
  if (error instanceof KeyIssuingError && !(error instanceof KeyIssuingFailedError)) {
    return new AdminError(error.code, error.message, { cause: error });
  }
  return error;
}

/**
 * Refuses a scope outside the access policy: such a scope is never sent
 * upstream. Checked by every entry point that can refresh (admin, and the
 * refresh function, which may be invoked directly).
 */
export function assertConfiguredScope(
  scopes: ReadonlySet<string>,
  scope: string | undefined,
): void {
  if (scope !== undefined && !scopes.has(scope)) {
    throw new AdminError(
      'invalid_request',
      'that scope is not in the access policy, so it is never sent upstream',
    );
  }
}

const invalid = (problem: string): AdminError =>
  new AdminError('invalid_request', `${problem}. Valid events: ${ADMIN_EVENTS.join(' | ')}`);

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Fails unless `event` has exactly the `allowed` fields. */
function onlyFields(event: Record<string, unknown>, action: string, allowed: string[]): void {
  const extra = Object.keys(event).filter((k) => !allowed.includes(k));
  if (extra.length > 0) {
    const shown = extra.every((k) => /^[A-Za-z_]{1,32}$/.test(k)) ? `: ${extra.join(', ')}` : '';
    throw invalid(
      `"${action}" takes ${allowed.filter((k) => k !== 'action').join(', ') || 'no other field'}; unknown field${extra.length > 1 ? 's' : ''}${shown}`,
    );
  }
}

function scopeOf(event: Record<string, unknown>, action: string): string | undefined {
  const { scope } = event;
  const wanted = `a scope matching ${SCOPE_PATTERN.source}, or "${UNSCOPED}"`;
  if (scope === undefined) throw invalid(`"${action}" needs "scope": ${wanted}`);
  // The value is not quoted: an event may be pasted from anywhere.
  if (typeof scope !== 'string' || !SCOPE_PATTERN.test(scope)) {
    throw invalid(`"${action}": "scope" must be ${wanted}`);
  }
  return scope === UNSCOPED ? undefined : scope;
}

/**
 * Parses an admin event (docs/operations.md). Anything else is an AdminError
 * `invalid_request` whose message lists every valid event; nothing the
 * caller sent is echoed but short plain field names.
 */
export function parseAdminEvent(event: unknown): AdminEvent {
  if (!isRecord(event)) throw invalid('The event must be a JSON object with an "action"');
  // The short form of "invalidate everything": {"all":true}, without an action.
  const action = event.action === undefined && 'all' in event ? 'invalidate' : event.action;
  switch (action) {
    case 'status':
      onlyFields(event, 'status', ['action']);
      return { action: 'status' };
    case 'invalidate':
      if (event.all !== undefined) {
        onlyFields(event, 'invalidate', event.action === undefined ? ['all'] : ['action', 'all']);
        if (event.all !== true) throw invalid('"all" must be true');
        return { action: 'invalidate', all: true };
      }
      onlyFields(event, 'invalidate', ['action', 'scope']);
      return { action: 'invalidate', all: false, scope: scopeOf(event, 'invalidate') };
    case 'refresh':
      onlyFields(event, 'refresh', ['action', 'scope']);
      return { action: 'refresh', scope: scopeOf(event, 'refresh') };
    case 'issue-keys':
      // The key-issuing job validates its own fields, with its own clear message.
      return { action: 'issue-keys', event };
    case 'clear-pending-key': {
      onlyFields(event, 'clear-pending-key', ['action', 'businessApplicationId', 'reason']);
      const problems = clearPendingKeyProblems(event);
      if (problems.length > 0) throw invalid(`"clear-pending-key": ${problems.join('; ')}`);
      return { action: 'clear-pending-key', request: parseClearPendingKeyEvent(event) };
    }
    default:
      throw invalid(event.action === undefined ? 'The event has no "action"' : 'Unknown "action"');
  }
}
