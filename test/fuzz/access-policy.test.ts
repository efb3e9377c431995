/**
 * Fuzzing the access policy: AccessPolicy.parse never throws anything but a
 * ConfigError, whatever the text; a parsed policy's allows() never throws,
 * answers a boolean, and denies every scope outside the policy's `scopes`;
 * and on policies and callers drawn from small shared pools, allows() answers
 * exactly what a reference model of the access policy rules answers.
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
const wellFormed = fc.record(
  {
    keyIssuing: fc.oneof(
      fc.record({
        businessApplicationIds: fc.array(fc.constantFrom(...POOL, 'bad id'), { maxLength: 3 }),
      }),
      fc.anything(),
    ),
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
  },
  { requiredKeys: ['scopes', 'grants'] },
);
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

/**
 * What a valid document is, written apart from access-policy-schema.ts: the
 * model the fast one-pass check and the per-element schema must both match.
 */
function referenceAccepts(doc: unknown): boolean {
  const isObject = (x: unknown): x is Record<string, unknown> =>
    typeof x === 'object' && x !== null && !Array.isArray(x);
  const only = (x: Record<string, unknown>, keys: string[]) =>
    Object.keys(x).every((k) => keys.includes(k));
  const isScope = (x: unknown) =>
    typeof x === 'string' && /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/.test(x);
  const isPrincipal = (x: unknown) =>
    typeof x === 'string' &&
    /^arn:aws(?:-cn|-us-gov|-iso(?:-[a-z])?)?:iam::\d{12}:(?:root|(?:role|user)\/(?:[\w+=,.@-]+\/)*[\w+=,.@-]+)$/.test(
      x,
    );
  if (!isObject(doc) || !only(doc, ['scopes', 'grants', 'keyIssuing'])) return false;
  const { scopes, grants, keyIssuing } = doc;
  if (!Array.isArray(scopes) || !scopes.every(isScope) || scopes.includes('unscoped')) return false;
  if (!Array.isArray(grants)) return false;
  for (const g of grants) {
    if (!isObject(g) || !only(g, ['principal', 'scopes', 'unscoped']) || !isPrincipal(g.principal))
      return false;
    if (g.unscoped !== undefined && typeof g.unscoped !== 'boolean') return false;
    if (g.scopes !== undefined) {
      if (!Array.isArray(g.scopes)) return false;
      if (!g.scopes.every((x) => x === '*' || (isScope(x) && scopes.includes(x)))) return false;
    }
  }
  if (keyIssuing !== undefined) {
    if (!isObject(keyIssuing) || !only(keyIssuing, ['businessApplicationIds'])) return false;
    const ids = keyIssuing.businessApplicationIds;
    if (!Array.isArray(ids) || !ids.every(isScope) || new Set(ids).size !== ids.length)
      return false;
  }
  return true;
}

it(`accepts exactly the documents a reference model accepts, on ${RUNS} documents`, () => {
  let accepted = 0;
  fc.assert(
    fc.property(document, (doc) => {
      const json = JSON.stringify(doc) ?? 'null';
      let parsed = true;
      try {
        AccessPolicy.parse(json);
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        parsed = false;
      }
      expect(parsed).toBe(referenceAccepts(JSON.parse(json)));
      if (parsed) accepted++;
    }),
    { numRuns: RUNS },
  );
  expect(accepted).toBeGreaterThan(RUNS / 10);
});

/*
 * A reference model of the access policy rules (docs/configuration.md), written apart from access-policy.ts.
 * Callers and grants are built from small shared pools of partitions, accounts
 * and names, so that grants match callers often, and misses are near misses.
 */
const PARTITIONS = ['aws', 'aws-cn'];
const ACCOUNTS = ['111122223333', '444455556666'];
const NAMES = ['checkout', 'billing', 'ops'];
const PATHS = ['', 'team/', 'a/b/'];
const SCOPES = ['ba_1', 'ba_2', 'ba_3'];

interface Caller {
  readonly arn: string;
  /** Undefined: not a caller ARN the policy can recognise, so never allowed. */
  readonly who?: { partition: string; account: string; kind: string; name: string };
}

/** Mostly the first of the pool, so that partitions, accounts and names coincide often. */
const mostlyFirst = (pool: string[]) =>
  fc.oneof({ arbitrary: fc.constant(pool[0] as string), weight: 3 }, fc.constantFrom(...pool));
const site = fc.record({
  partition: mostlyFirst(PARTITIONS),
  account: mostlyFirst(ACCOUNTS),
  name: mostlyFirst(NAMES),
  path: mostlyFirst(PATHS),
});
const modelCaller: fc.Arbitrary<Caller> = fc.oneof(
  {
    arbitrary: site.chain(({ partition: p, account: a, name: n, path }) =>
      fc.constantFrom<Caller>(
        {
          arn: `arn:${p}:iam::${a}:root`,
          who: { partition: p, account: a, kind: 'root', name: '' },
        },
        {
          arn: `arn:${p}:iam::${a}:role/${path}${n}`,
          who: { partition: p, account: a, kind: 'role', name: n },
        },
        {
          arn: `arn:${p}:iam::${a}:user/${path}${n}`,
          who: { partition: p, account: a, kind: 'user', name: n },
        },
        {
          arn: `arn:${p}:sts::${a}:assumed-role/${n}/s-1`,
          who: { partition: p, account: a, kind: 'assumed-role', name: n },
        },
        {
          arn: `arn:${p}:sts::${a}:federated-user/${n}`,
          who: { partition: p, account: a, kind: 'federated-user', name: n },
        },
      ),
    ),
    weight: 6,
  },
  // Near misses: the right words in the wrong service, shape or case.
  {
    arbitrary: site.chain(({ partition: p, account: a, name: n }) =>
      fc.constantFrom<Caller>(
        { arn: `arn:${p}:sts::${a}:root` },
        { arn: `arn:${p}:iam::${a}:root/${n}` },
        { arn: `arn:${p}:sts::${a}:role/${n}` },
        { arn: `arn:${p}:sts::${a}:user/${n}` },
        { arn: `arn:${p}:iam::${a}:assumed-role/${n}/s-1` },
        { arn: `arn:${p}:sts::${a}:assumed-role/${n}` },
        { arn: `arn:${p}:sts::${a}:assumed-role/${n}/` },
        { arn: `arn:${p}:iam::${a}:federated-user/${n}` },
        { arn: `arn:${p}:sts::${a}:federated-user/team/${n}` },
        { arn: `arn:${p}:iam::${a}:role/` },
        { arn: `arn:${p}:iam::${a.slice(1)}:role/${n}` },
        { arn: `arn:aws-xx:iam::${a}:role/${n}` },
        { arn: `ARN:${p}:iam::${a}:role/${n}` },
        { arn: '' },
      ),
    ),
    weight: 1,
  },
);

interface ModelGrant {
  readonly principal: string;
  readonly partition: string;
  readonly account: string;
  readonly kind: 'root' | 'role' | 'user';
  readonly name: string;
  readonly scopes?: readonly string[];
  readonly unscoped?: boolean;
}

const modelPolicy = fc.subarray(SCOPES).chain((scopes) =>
  fc.record({
    scopes: fc.constant(scopes),
    grants: fc.array(
      fc
        .record(
          {
            site,
            kind: fc.constantFrom('root' as const, 'role' as const, 'user' as const),
            scopes: fc.oneof(
              fc.subarray(scopes),
              fc.constant(['*']),
              fc.constant([...scopes, '*']),
            ),
            unscoped: fc.boolean(),
          },
          { requiredKeys: ['site', 'kind'] },
        )
        .map(
          ({ site: { partition, account, name, path }, kind, ...rest }): ModelGrant => ({
            principal:
              kind === 'root'
                ? `arn:${partition}:iam::${account}:root`
                : `arn:${partition}:iam::${account}:${kind}/${path}${name}`,
            partition,
            account,
            kind,
            name: kind === 'root' ? '' : name,
            ...rest,
          }),
        ),
      { minLength: 1, maxLength: 4 },
    ),
  }),
);

function grantMatchesModel(grant: ModelGrant, caller: Caller): boolean {
  const who = caller.who;
  if (!who || who.partition !== grant.partition || who.account !== grant.account) return false;
  if (grant.kind === 'root') return true;
  if (grant.kind === 'role') {
    return (who.kind === 'role' || who.kind === 'assumed-role') && who.name === grant.name;
  }
  return caller.arn === grant.principal;
}

function modelAllows(
  policy: { scopes: string[]; grants: ModelGrant[] },
  caller: Caller,
  asked: string | undefined,
): boolean {
  if (asked !== undefined && !policy.scopes.includes(asked)) return false;
  return policy.grants.some(
    (g) =>
      grantMatchesModel(g, caller) &&
      (asked === undefined
        ? g.unscoped === true
        : (g.scopes ?? []).includes('*') || (g.scopes ?? []).includes(asked)),
  );
}

it(`allows() agrees with a reference model on ${RUNS} policies, callers and scopes`, () => {
  let allowed = 0;
  let denied = 0;
  let deniedMatching = 0;
  /** Allowed answers by the kinds of grant that allow them. */
  const byKind = { root: 0, role: 0, user: 0 };
  fc.assert(
    fc.property(
      modelPolicy,
      modelCaller,
      fc.option(fc.constantFrom(...SCOPES, 'ba_9'), { nil: undefined, freq: 3 }),
      (doc, caller, asked) => {
        const policy = AccessPolicy.parse(
          JSON.stringify({
            scopes: doc.scopes,
            grants: doc.grants.map(({ principal, scopes, unscoped }) => ({
              principal,
              ...(scopes === undefined ? {} : { scopes }),
              ...(unscoped === undefined ? {} : { unscoped }),
            })),
          }),
        );
        const expected = modelAllows(doc, caller, asked);
        expect(policy.allows(caller.arn, asked)).toBe(expected);
        if (expected) {
          allowed++;
          for (const kind of ['root', 'role', 'user'] as const) {
            if (doc.grants.some((g) => g.kind === kind && grantMatchesModel(g, caller)))
              byKind[kind]++;
          }
        } else {
          denied++;
          // Denied although some grant names this caller: the scope is what decides.
          if (doc.grants.some((g) => grantMatchesModel(g, caller))) deniedMatching++;
        }
      },
    ),
    { numRuns: RUNS },
  );
  console.info(
    `access-policy: ${allowed} allowed, ${denied} denied (${deniedMatching} by scope alone); allowed via root/role/user grants: ${byKind.root}/${byKind.role}/${byKind.user}`,
  );
  // Coverage: both answers plentiful, every kind of grant allowing, and denials
  // of callers a grant does name (the scope decides).
  expect(allowed).toBeGreaterThan(RUNS / 20);
  expect(denied).toBeGreaterThan(RUNS / 10);
  expect(deniedMatching).toBeGreaterThan(RUNS / 20);
  expect(byKind.root).toBeGreaterThan(400);
  expect(byKind.role).toBeGreaterThan(150);
  expect(byKind.user).toBeGreaterThan(50);
});
