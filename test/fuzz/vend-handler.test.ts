/**
 * Fuzzing the vend Function URL handler (createVendRuntime's app, in-memory
 * store, a provider that always answers well): arbitrary methods, paths, raw
 * query strings and identities. Every answer is a documented status with its
 * documented code, bad input is never a 500, nothing throws, and a 200 is a
 * token of the scope asked for (or the unscoped one).
 *
 * Hostile input rarely gets as far as a token, so a second property sends
 * GET /token as granted callers with mostly valid queries: thousands of 200s,
 * each checked against the provider fake's record of which scope every token
 * was minted for.
 */
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { fingerprint } from '../../functions/core/fingerprint.js';
import { fixedPolicy } from '../../functions/core/policy-source.js';
import { createVendRuntime } from '../../functions/vend-token/runtime.js';
import { TestClock } from '../support/clock.js';
import { MemoryTokenStore } from '../support/memory-store.js';
import {
  CALLER_ARN,
  demoCredentials,
  PARTNER_ARN,
  quietLogger,
  SHARED_SEALER,
  STRANGER_ARN,
  TEST_POLICY,
  urlEvent,
  vend,
} from '../support/vend-harness.js';

const FUZZ_RUNS = 10_000;

/** Every token the provider fake minted, and the scope it was minted for (null: unscoped). */
const minted = new Map<string, string | null>();

/** The provider: a valid answer echoing the requested scope, without a network. */
const provider: typeof fetch = async (_input, init) => {
  const scope = new URLSearchParams(String(init?.body)).get('scope');
  const token = `fuzz_${scope ?? 'unscoped'}_${minted.size}`;
  minted.set(token, scope);
  return Response.json({
    access_token: token,
    token_type: 'Bearer',
    expires_in: 7200,
    ...(scope === null ? {} : { scope }),
  });
};

const makeRuntime = (clock = new TestClock({ virtualSleep: true })) =>
  createVendRuntime({
    store: new MemoryTokenStore(),
    sealer: SHARED_SEALER,
    credentials: demoCredentials(),
    provider: { baseUrl: 'https://provider.example', unscopedScopeMode: 'omit' },
    policy: fixedPolicy(TEST_POLICY),
    logger: quietLogger(),
    clock,
    fetch: provider,
  });

const runtime = makeRuntime();

/** A 200 from GET /token is a token the provider minted for exactly the scope asked for. */
function expectTokenFor(body: Record<string, unknown>, asked: string | null): void {
  expect(body.token_type).toBe('Bearer');
  expect(typeof body.access_token).toBe('string');
  expect(minted.has(body.access_token as string)).toBe(true);
  expect(minted.get(body.access_token as string)).toBe(asked);
  if (asked === null) expect(body).not.toHaveProperty('scope');
  else expect(body.scope).toBe(asked);
}

const DOCUMENTED: Record<number, string[]> = {
  400: ['invalid_request'],
  401: ['unauthenticated'],
  403: ['access_denied'],
  404: ['not_found'],
  405: ['method_not_allowed'],
};

const text = fc.string({ unit: 'binary', maxLength: 40 });
const scopeLike = fc.oneof(
  fc.constantFrom('ba_demo_1', 'ba_demo_2', 'ba_other', '', 'a'.repeat(129), '~unscoped'),
  fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,20}$/),
  text,
);
const param = fc.oneof(
  fc.tuple(fc.constant('scope'), scopeLike),
  fc.tuple(
    fc.constant('min_ttl'),
    fc.oneof(
      fc.integer({ min: -10, max: 5000 }).map(String),
      text,
      fc.constantFrom('1e3', '0x10', ' 5', '3600', '3601'),
    ),
  ),
  fc.tuple(fc.constant('revoked'), fc.oneof(fc.stringMatching(/^[0-9a-f]{16}$/), text)),
  fc.tuple(fc.oneof(text, fc.constantFrom('Scope', '__proto__', 'constructor', '')), text),
);
const query = fc.oneof(
  fc
    .array(param, { maxLength: 4 })
    .map((pairs) =>
      pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&'),
    ),
  text,
  fc.constantFrom('%', '%%', '%zz=1', 'scope=%E0%A4%A', '&&&', '=', 'scope'),
);
const path = fc.oneof(
  fc.constantFrom('/token', '/healthz', '/', '/token/', '/TOKEN', '//token', '/token?x'),
  fc.webPath(),
  text,
);
const method = fc.oneof(
  fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS', 'PATCH', 'get'),
  text,
);
const identity = fc.oneof(
  fc.constantFrom(
    CALLER_ARN,
    PARTNER_ARN,
    STRANGER_ARN,
    null,
    '',
    'arn:aws:iam::111122223333:root',
  ),
  fc.stringMatching(/^arn:aws:(sts|iam)::\d{12}:[a-z-]+\/[\w+=,.@/-]{0,30}$/),
  text,
);

it(`answers ${FUZZ_RUNS} arbitrary requests with documented statuses and codes only`, async () => {
  await fc.assert(
    fc.asyncProperty(method, path, query, identity, async (m, p, q, arn) => {
      const answer = await vend(runtime, urlEvent({ method: m, path: p, query: q, arn }));

      if (answer.status === 200) {
        if (p === '/healthz') {
          expect(answer.body).toEqual({ status: 'ok' });
          return;
        }
        expect(p).toBe('/token');
        expect(m).toBe('GET');
        expectTokenFor(answer.body, new URLSearchParams(q).get('scope'));
        expect(answer.headers['cache-control']).toBe('no-store');
        return;
      }
      expect(DOCUMENTED[answer.status]).toContain(answer.body.code);
      expect(answer.headers['content-type']).toBe('application/problem+json');
      expect(answer.body.status).toBe(answer.status);
      expect(typeof answer.body.detail).toBe('string');
      if (answer.status === 405) expect(answer.headers.allow).toBe('GET');
    }),
    { numRuns: FUZZ_RUNS },
  );
});

/** The policy's own scopes; TEST_POLICY grants CALLER_ARN all of them, PARTNER_ARN only unscoped. */
const SCOPES = [...TEST_POLICY.scopes];
const GRANTED = new Map<string, ReadonlySet<string | undefined>>([
  [CALLER_ARN, new Set(SCOPES)],
  [PARTNER_ARN, new Set([undefined])],
  [STRANGER_ARN, new Set()],
]);

type Part = { readonly value: string; readonly valid: boolean } | undefined;
const valid = (value: string): Part => ({ value, valid: true });
const junk = (value: string): Part => ({ value, valid: false });

/** Mostly a configured scope or none; sometimes an unconfigured or malformed one. */
const scopePart = fc.oneof(
  { arbitrary: fc.constantFrom(...SCOPES).map(valid), weight: 6 },
  { arbitrary: fc.constant(undefined), weight: 3 },
  {
    arbitrary: fc.oneof(
      fc.constantFrom('ba_other', 'ba_demo_3', 'BA_DEMO_1').map(valid),
      fc.constantFrom('', ' ba_demo_1', 'ba_demo_1/x', '*', 'a'.repeat(129)).map(junk),
    ),
    weight: 1,
  },
);
const minTtlPart = fc.oneof(
  { arbitrary: fc.integer({ min: 0, max: 3600 }).map((n) => valid(String(n))), weight: 6 },
  { arbitrary: fc.constant(undefined), weight: 2 },
  { arbitrary: fc.constantFrom('-1', '3601', '1e3', 'x', '').map(junk), weight: 1 },
);
/** `last`: the fingerprint of the token last served for that scope, so tokens get replaced. */
const revokedPart = fc.oneof(
  { arbitrary: fc.constant(undefined), weight: 8 },
  { arbitrary: fc.constant('last' as const), weight: 1 },
  { arbitrary: fc.stringMatching(/^[0-9a-f]{16}$/).map(valid), weight: 1 },
);
/** Seconds to let pass first: sometimes enough for tokens to age, expire and be replaced. */
const elapse = fc.oneof(
  { arbitrary: fc.constant(0), weight: 9 },
  { arbitrary: fc.integer({ min: 1, max: 600 }), weight: 1 },
);
const caller = fc.oneof(
  { arbitrary: fc.constant(CALLER_ARN), weight: 3 },
  { arbitrary: fc.constant(PARTNER_ARN), weight: 2 },
  { arbitrary: fc.constant(STRANGER_ARN), weight: 1 },
);

it(`serves ${FUZZ_RUNS} granted GET /token requests only tokens of the scope asked for`, async () => {
  const clock = new TestClock({ virtualSleep: true });
  const app = makeRuntime(clock);
  const lastServed = new Map<string | null, string>();
  /** Per scope asked, the distinct tokens served for it. */
  const served = new Map<string | null, Set<string>>();
  let ok = 0;
  let unscopedOk = 0;
  await fc.assert(
    fc.asyncProperty(
      caller,
      scopePart,
      minTtlPart,
      revokedPart,
      elapse,
      async (arn, scope, minTtl, revokedChoice, seconds) => {
        clock.advance(seconds);
        const asked = scope?.value ?? null;
        const last = lastServed.get(asked);
        const revoked =
          revokedChoice === 'last' ? (last ? valid(fingerprint(last)) : undefined) : revokedChoice;
        const parts: [string, Part][] = [
          ['scope', scope],
          ['min_ttl', minTtl],
          ['revoked', revoked],
        ];
        const query = parts
          .flatMap(([k, p]) => (p === undefined ? [] : [`${k}=${encodeURIComponent(p.value)}`]))
          .join('&');
        const answer = await vend(app, urlEvent({ query, arn }));

        const wellFormed = parts.every(([, p]) => p === undefined || p.valid);
        const granted = GRANTED.get(arn)?.has(asked ?? undefined) === true;
        expect(answer.status).toBe(!wellFormed ? 400 : granted ? 200 : 403);
        if (answer.status !== 200) return;
        expectTokenFor(answer.body, asked);
        const token = answer.body.access_token as string;
        lastServed.set(asked, token);
        served.set(asked, (served.get(asked) ?? new Set()).add(token));
        ok++;
        if (asked === null) unscopedOk++;
      },
    ),
    { numRuns: FUZZ_RUNS },
  );
  // Coverage: most cases reach a token, unscoped ones included, and tokens get replaced.
  expect(ok).toBeGreaterThan(FUZZ_RUNS / 5);
  expect(unscopedOk).toBeGreaterThan(FUZZ_RUNS / 50);
  for (const s of [...SCOPES, null]) expect(served.get(s)?.size ?? 0).toBeGreaterThan(10);
  // No token was ever served for two different scopes.
  const owners = new Map<string, string | null>();
  for (const [s, tokens] of served) {
    for (const t of tokens) {
      expect(owners.get(t) ?? s).toBe(s);
      owners.set(t, s);
    }
  }
  console.info(
    `vend-handler: ${ok} 200s (${unscopedOk} unscoped), tokens per scope:`,
    Object.fromEntries([...served].map(([s, t]) => [String(s), t.size])),
  );
});
