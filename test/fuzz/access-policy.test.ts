/**
 * Fuzzing the access policy: AccessPolicy.parse never throws anything but a
 * ConfigError, whatever the text; a parsed policy's allows() never throws,
 * answers a boolean, and denies every scope outside the policy's `scopes`.
 */
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { AccessPolicy } from '../../functions/core/access-policy.js';
import { AccessDeniedError, ConfigError } from '../../functions/core/errors.js';

const RUNS = 10_000;

const text = fc.string({ unit: 'binary', maxLength: 30 });
const scope = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,12}$/),
  text,
  fc.constant('*'),
);
const principal = fc.oneof(
  fc.stringMatching(
    /^arn:aws(-cn|-us-gov)?:iam::\d{12}:(root|role\/[\w+=,.@-]{1,12}|user\/[\w+=,.@/-]{1,12})$/,
  ),
  fc.stringMatching(
    /^arn:aws:sts::\d{12}:(assumed-role\/[\w-]{1,8}\/[\w-]{1,8}|federated-user\/[\w-]{1,8})$/,
  ),
  text,
);
const grant = fc.record(
  {
    principal: fc.oneof(principal, fc.anything()),
    scopes: fc.oneof(fc.array(scope, { maxLength: 4 }), fc.anything()),
    unscoped: fc.oneof(fc.boolean(), fc.anything()),
    extra: fc.anything(),
  },
  { requiredKeys: [] },
);
const POOL = ['ba_1', 'ba_2', 'app:3.x', 'B-4'];
const validPrincipal = fc.stringMatching(
  /^arn:aws:iam::(111122223333|\d{12}):(root|role\/[\w+=,.@-]{1,8}|role\/[\w-]{1,4}\/[\w-]{1,8}|user\/[\w-]{1,8})$/,
);
/** Policies that mostly parse: scopes from a pool, grants naming them or '*'. */
const wellFormed = fc.record({
  scopes: fc.subarray(POOL),
  grants: fc.array(
    fc.record(
      {
        principal: validPrincipal,
        scopes: fc.oneof(fc.subarray(POOL), fc.constant(['*'])),
        unscoped: fc.boolean(),
      },
      { requiredKeys: ['principal'] },
    ),
    { maxLength: 4 },
  ),
});
const document = fc.oneof(
  { arbitrary: wellFormed, weight: 3 },
  fc.record(
    {
      scopes: fc.oneof(fc.array(scope, { maxLength: 5 }), fc.anything()),
      grants: fc.oneof(fc.array(grant, { maxLength: 4 }), fc.anything()),
      other: fc.anything(),
    },
    { requiredKeys: [] },
  ),
  fc.anything(),
);
const policyText = fc.oneof(
  document.map((doc) => JSON.stringify(doc) ?? 'undefined'),
  fc.json(),
  text,
);
const caller = fc.oneof(
  principal,
  validPrincipal,
  fc.stringMatching(
    /^arn:aws:sts::111122223333:(assumed-role\/[\w-]{1,8}\/s|federated-user\/[\w-]{1,8})$/,
  ),
  fc.constantFrom('', 'arn:aws:sts::111122223333:assumed-role/x'),
);

it(`parses ${RUNS} arbitrary policies into a policy or a ConfigError, and allows() never throws`, () => {
  let parsed = 0;
  let granted = 0;
  fc.assert(
    fc.property(
      policyText,
      caller,
      fc.option(fc.oneof(fc.constantFrom(...POOL), scope), { nil: undefined }),
      (json, arn, asked) => {
        let policy: AccessPolicy;
        try {
          policy = AccessPolicy.parse(json);
        } catch (error) {
          expect(error).toBeInstanceOf(ConfigError);
          return;
        }
        parsed++;
        const allowed = policy.allows(arn, asked);
        expect(typeof allowed).toBe('boolean');
        if (asked !== undefined && !policy.scopes.has(asked)) expect(allowed).toBe(false);
        if (allowed) granted++;
        if (allowed) expect(() => policy.authorize(arn, asked)).not.toThrow();
        else expect(() => policy.authorize(arn, asked)).toThrow(AccessDeniedError);
      },
    ),
    { numRuns: RUNS },
  );
  // The generators reach valid policies too, not only rejections.
  expect(parsed).toBeGreaterThan(RUNS / 50);
  expect(granted).toBeGreaterThan(0);
});
