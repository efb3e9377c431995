/**
 * The job's invocation event: `{}` (the schedule: every configured id) or
 * `{"businessApplicationIds": [...], "force": true}` (manual). The admin
 * function's `{"action":"issue-keys", ...}` is accepted as well, so one test
 * event works on both functions. Unknown fields are refused: a typo such as
 * `businessApplicationId` must not silently run every configured id.
 */
import * as v from 'valibot';
import { BUSINESS_APPLICATION_ID_PATTERN } from './business-application-id.js';
import { InvalidKeyIssuingRequestError } from './errors.js';

/** Most ids one event may name. */
export const MAX_EVENT_IDS = 100;

export const EXPECTED_EVENT = `{"businessApplicationIds"?: [1..${MAX_EVENT_IDS} ids matching ${BUSINESS_APPLICATION_ID_PATTERN.source}], "force"?: boolean} (force needs businessApplicationIds; "action": "issue-keys" is allowed)`;

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
  }),
  v.check(
    (event) => event.force !== true || event.businessApplicationIds !== undefined,
    'force needs businessApplicationIds',
  ),
);

/** A validated request: absent ids mean the configured ones. */
export interface KeyIssuingRequest {
  readonly businessApplicationIds?: readonly string[];
  readonly force: boolean;
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
  const { businessApplicationIds, force } = result.output;
  return {
    ...(businessApplicationIds ? { businessApplicationIds } : {}),
    force: force ?? false,
  };
}
