/**
 * Fuzzing the vend Function URL handler (createVendRuntime's app, in-memory
 * store, a provider that always answers well): arbitrary methods, paths, raw
 * query strings and identities. Every answer is a documented status with its
 * documented code, bad input is never a 500, nothing throws, and a 200 is a
 * token of the scope asked for (or the unscoped one).
 */
import fc from 'fast-check';
import { expect, it } from 'vitest';
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

/** The provider: a valid answer echoing the requested scope, without a network. */
const provider: typeof fetch = async (_input, init) => {
  const scope = new URLSearchParams(String(init?.body)).get('scope');
  return Response.json({
    access_token: `fuzz_${Math.random().toString(36).slice(2)}`,
    token_type: 'Bearer',
    expires_in: 7200,
    ...(scope === null ? {} : { scope }),
  });
};

const runtime = createVendRuntime({
  store: new MemoryTokenStore(),
  sealer: SHARED_SEALER,
  credentials: demoCredentials(),
  provider: { baseUrl: 'https://provider.example', unscopedScopeMode: 'omit' },
  policy: TEST_POLICY,
  logger: quietLogger(),
  clock: new TestClock({ virtualSleep: true }),
  fetch: provider,
});

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
        expect(answer.body.token_type).toBe('Bearer');
        expect(answer.body.access_token).toMatch(/^fuzz_/);
        const asked = new URLSearchParams(q).get('scope');
        expect(answer.body.scope ?? null).toBe(asked);
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
