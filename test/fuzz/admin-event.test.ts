/**
 * Fuzzing admin events: parseAdminEvent answers a valid event or an AdminError
 * `invalid_request`, never anything else, whatever it is handed.
 */
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { AdminError, parseAdminEvent } from '../../functions/admin/admin-event.js';
import { SCOPE_PATTERN } from '../../functions/core/access-policy.js';
import { BUSINESS_APPLICATION_ID_PATTERN } from '../../functions/issue-keys/business-application-id.js';
import { MAX_REASON_LENGTH } from '../../functions/issue-keys/event.js';

const RUNS = 10_000;

const text = fc.string({ unit: 'binary', maxLength: 30 });
const action = fc.oneof(
  fc.constantFrom(
    'status',
    'invalidate',
    'refresh',
    'issue-keys',
    'clear-pending-key',
    'Status',
    '',
    '__proto__',
  ),
  text,
  fc.anything(),
);
const scope = fc.oneof(
  fc.constantFrom('unscoped', 'ba_demo_1', '', '~unscoped'),
  fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,12}$/),
  text,
  fc.anything(),
);
const reason = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ minLength: MAX_REASON_LENGTH - 2, maxLength: MAX_REASON_LENGTH + 2 }),
  fc.anything(),
);
const event = fc.oneof(
  fc.record(
    { action: fc.constant('clear-pending-key'), businessApplicationId: scope, reason },
    { requiredKeys: ['action'] },
  ),
  fc.record(
    {
      action,
      scope,
      all: fc.oneof(fc.constant(true), fc.anything()),
      businessApplicationIds: fc.anything(),
      businessApplicationId: scope,
      reason,
      force: fc.anything(),
      extra: fc.anything(),
    },
    { requiredKeys: [] },
  ),
  fc.anything(),
  fc.json().map((json) => JSON.parse(json) as unknown),
);

it(`parses ${RUNS} arbitrary admin events into a valid event or invalid_request`, () => {
  fc.assert(
    fc.property(event, (raw) => {
      let parsed: ReturnType<typeof parseAdminEvent>;
      try {
        parsed = parseAdminEvent(raw);
      } catch (error) {
        expect(error).toBeInstanceOf(AdminError);
        expect((error as AdminError).code).toBe('invalid_request');
        return;
      }
      switch (parsed.action) {
        case 'status':
          expect(Object.keys(raw as object)).toEqual(['action']);
          break;
        case 'invalidate':
        case 'refresh':
          if ('all' in parsed && parsed.all) expect((raw as { all: unknown }).all).toBe(true);
          else {
            const { scope: s } = parsed as { scope: string | undefined };
            expect(s === undefined || SCOPE_PATTERN.test(s)).toBe(true);
            expect(s).not.toBe('unscoped');
          }
          break;
        case 'issue-keys':
          expect(parsed.event).toBe(raw);
          break;
        case 'clear-pending-key': {
          const { businessApplicationId, reason } = parsed.request;
          expect(Object.keys(raw as object).sort()).toEqual([
            'action',
            'businessApplicationId',
            'reason',
          ]);
          expect(BUSINESS_APPLICATION_ID_PATTERN.test(businessApplicationId)).toBe(true);
          expect(reason.length).toBeGreaterThan(0);
          expect(reason.length).toBeLessThanOrEqual(MAX_REASON_LENGTH);
          expect(reason).toBe(reason.trim());
          expect(reason).not.toMatch(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u);
          break;
        }
        default:
          throw new Error(`unexpected action ${JSON.stringify(parsed)}`);
      }
    }),
    { numRuns: RUNS },
  );
});
