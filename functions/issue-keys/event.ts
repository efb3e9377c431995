/**
 * The job's invocation event: `{}` (the schedule: every configured id) or
 * `{"businessApplicationIds": [...], "force": true}` (manual; `"forceId"` names
 * the forced request, see job.ts). The admin
 * function's `{"action":"issue-keys", ...}` is accepted as well, so one test
 * event works on both functions. Unknown fields are refused: a typo such as
 * `businessApplicationId` must not silently run every configured id.
 */
import * as v from 'valibot';
import { BUSINESS_APPLICATION_ID_PATTERN } from './business-application-id.js';
import { InvalidKeyIssuingRequestError } from './errors.js';

/** Most ids one event may name. */
export const MAX_EVENT_IDS = 100;

/** A forced request's identity (job.ts, FORCED REQUESTS): a Lambda request id, a ticket number. */
export const FORCE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$/;

export const EXPECTED_EVENT = `{"businessApplicationIds"?: [1..${MAX_EVENT_IDS} ids matching ${BUSINESS_APPLICATION_ID_PATTERN.source}], "force"?: boolean, "forceId"?: string matching ${FORCE_ID_PATTERN.source}} (force needs businessApplicationIds, forceId needs force; "action": "issue-keys" is allowed)`;

const EventSchema = v.pipe(
  v.strictObject({
    action: v.optional(v.literal('issue-keys')),
    businessApplicationIds: v.optional(
      v.pipe(
        v.array(v.pipe(v.string(), v.regex(BUSINESS_APPLICATION_ID_PATTERN))),
        v.minLength(1),
        v.maxLength(MAX_EVENT_IDS),
      ),
    ),
    force: v.optional(v.boolean()),
    forceId: v.optional(v.pipe(v.string(), v.regex(FORCE_ID_PATTERN))),
  }),
  v.check(
    (event) => event.force !== true || event.businessApplicationIds !== undefined,
    'force needs businessApplicationIds',
  ),
  v.check(
    (event) => event.forceId === undefined || event.force === true,
    'forceId needs "force": true',
  ),
);

/** A validated request: absent ids mean the configured ones. */
export interface KeyIssuingRequest {
  readonly businessApplicationIds?: readonly string[];
  readonly force: boolean;
  /** A forced request's identity, when the event names one. */
  readonly forceId?: string;
}

/** One problem, by field path, without the value that was sent. */
function describe(issue: v.BaseIssue<unknown>): string {
  const path = v.getDotPath(issue);
  if (issue.type === 'check') return issue.message;
  if (issue.type === 'strict_object' && issue.expected === 'never') {
    return `unknown field ${JSON.stringify(String(path).slice(0, 100))}`;
  }
  if (path === null) return 'the event must be a JSON object';
  if (issue.type === 'strict_object' && issue.received === 'undefined') return `${path}: required`;
  return `${path}: expected ${issue.expected ?? issue.type}`;
}

/** Longest reason an operator may give for clearing a pending key. */
export const MAX_REASON_LENGTH = 500;

/** Control, format (bidi overrides...) and line/paragraph separator characters: none in a logged reason. */
const CONTROL = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

export const EXPECTED_CLEAR_EVENT = `{"action": "clear-pending-key", "businessApplicationId": an id matching ${BUSINESS_APPLICATION_ID_PATTERN.source}, "reason": 1..${MAX_REASON_LENGTH} characters, no control characters}`;

const ClearPendingKeySchema = v.strictObject({
  action: v.literal('clear-pending-key'),
  businessApplicationId: v.pipe(v.string(), v.regex(BUSINESS_APPLICATION_ID_PATTERN)),
  reason: v.pipe(
    v.string(),
    v.check((reason) => reason.trim() !== '', 'reason: must not be empty'),
    v.check(
      (reason) => reason.length <= MAX_REASON_LENGTH,
      `reason: at most ${MAX_REASON_LENGTH} characters`,
    ),
    v.check((reason) => !CONTROL.test(reason), 'reason: must hold no control characters'),
  ),
});

/** An operator's request to drop a key job's pending Idempotency-Key (clear-pending-key.ts). */
export interface ClearPendingKeyRequest {
  readonly businessApplicationId: string;
  /** Why, as the operator wrote it (trimmed); logged. */
  readonly reason: string;
}

/** Whether an event asks for clear-pending-key (the issue-keys function's other event). */
export const isClearPendingKeyEvent = (event: unknown): boolean =>
  typeof event === 'object' &&
  event !== null &&
  (event as { action?: unknown }).action === 'clear-pending-key';

/**
 * The problems of a clear-pending-key event, by field, quoting nothing it holds;
 * empty when it is valid.
 */
export function clearPendingKeyProblems(event: unknown): string[] {
  const result = v.safeParse(ClearPendingKeySchema, event);
  return result.success ? [] : [...new Set(result.issues.map(describe))];
}

/**
 * Validates a clear-pending-key event.
 * @throws InvalidKeyIssuingRequestError listing every problem and the expected fields.
 */
export function parseClearPendingKeyEvent(event: unknown): ClearPendingKeyRequest {
  const result = v.safeParse(ClearPendingKeySchema, event);
  if (!result.success) {
    throw new InvalidKeyIssuingRequestError(
      `bad clear-pending-key event (${clearPendingKeyProblems(event).join('; ')}); expected ${EXPECTED_CLEAR_EVENT}`,
    );
  }
  const { businessApplicationId, reason } = result.output;
  return { businessApplicationId, reason: reason.trim() };
}

/**
 * Validates an event. `null`/`undefined` count as `{}`.
 * @throws InvalidKeyIssuingRequestError listing every problem and the expected fields.
 */
export function parseKeyIssuingEvent(event: unknown): KeyIssuingRequest {
  const result = v.safeParse(EventSchema, event ?? {});
  if (Array.isArray(event) || !result.success) {
    const problems = result.success
      ? ['the event must be a JSON object']
      : [...new Set(result.issues.map(describe))];
    throw new InvalidKeyIssuingRequestError(
      `bad key-issuing event (${problems.join('; ')}); expected ${EXPECTED_EVENT}`,
    );
  }
  const { businessApplicationIds, force, forceId } = result.output;
  return {
    ...(businessApplicationIds ? { businessApplicationIds } : {}),
    force: force ?? false,
    ...(forceId === undefined ? {} : { forceId }),
  };
}
