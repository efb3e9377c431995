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
  return `${path}: expected ${issue.expected ?? issue.type}`;
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
