/**
 * Fuzzing provider token responses: parseTokenResponse answers a well-formed
 * grant for the requested scope or one of the upstream errors, and a token
 * service whose minter is built on it never caches a rejected response.
 */
import fc from 'fast-check';
import { expect, it, vi } from 'vitest';
import { StaticCredentials } from '../../functions/adapters/credentials.js';
import {
  UpstreamCredentialsRejectedError,
  UpstreamError,
  UpstreamUnavailableError,
} from '../../functions/core/errors.js';
import {
  MAX_ACCESS_TOKEN_LENGTH,
  MAX_EXPIRES_IN_SECONDS,
  parseTokenResponse,
} from '../../functions/core/provider-client.js';
import { TokenService } from '../../functions/core/token-service.js';
import { TestClock } from '../support/clock.js';
import { MemoryTokenStore } from '../support/memory-store.js';
import { CREDS } from '../support/token-service-fixture.js';
import { SHARED_SEALER } from '../support/vend-harness.js';

const RUNS = 10_000;
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

const text = fc.string({ unit: 'binary', maxLength: 30 });
const requested = fc.option(fc.constantFrom('ba_1', 'ba_2'), { nil: undefined, freq: 2 });

/** Hostile values for each field of a token response. */
const FIELDS = {
  access_token: fc.oneof(
    fc.stringMatching(/^[A-Za-z0-9\-._~+/]{1,60}=*$/),
    fc.stringMatching(/^[A-Za-z0-9\-._~+/ =]{0,12}$/),
    text,
    fc.constantFrom(
      '',
      '=',
      'abc=d',
      'x'.repeat(MAX_ACCESS_TOKEN_LENGTH),
      'x'.repeat(MAX_ACCESS_TOKEN_LENGTH + 1),
      `${'x'.repeat(MAX_ACCESS_TOKEN_LENGTH - 2)}==`,
    ),
    fc.anything(),
  ),
  token_type: fc.oneof(
    fc.constantFrom('Bearer', 'bearer', 'BEARER', 'bEaReR', 'mac', '', 'Bearer ', 'Bearer2'),
    fc.anything(),
  ),
  expires_in: fc.oneof(
    fc.integer({ min: -5, max: MAX_EXPIRES_IN_SECONDS + 5 }),
    fc.constantFrom(0, 1, MAX_EXPIRES_IN_SECONDS, MAX_EXPIRES_IN_SECONDS + 1, 7200.5, 1e21),
    fc.double(),
    fc.constantFrom('7200', null, true),
    fc.anything(),
  ),
  scope: fc.oneof(fc.constantFrom('ba_1', 'ba_2', '', 'BA_1', 'ba_1 '), text, fc.anything()),
  created_at: fc.oneof(fc.integer(), fc.double(), fc.constantFrom('1', null), fc.anything()),
};
type Field = keyof typeof FIELDS;

/** A valid response for `scope`, with at most one field replaced by a hostile value or dropped. */
const nearlyValid = (scope: string | undefined) =>
  fc
    .record({
      access_token: fc.stringMatching(/^[A-Za-z0-9\-._~+/]{1,60}=*$/),
      token_type: fc.constantFrom('Bearer', 'bearer', 'BEARER'),
      expires_in: fc.integer({ min: 1, max: MAX_EXPIRES_IN_SECONDS }),
      created_at: fc.option(
        fc.oneof(fc.integer({ min: 0 }), fc.double({ noNaN: true, noDefaultInfinity: true })),
      ),
      // Unscoped: no scope, or the empty one.
      emptyScope: fc.boolean(),
      mutation: fc.option(
        fc.oneof(
          ...(Object.keys(FIELDS) as Field[]).map((field) =>
            fc.record({
              field: fc.constant(field),
              value: fc.option(FIELDS[field], { nil: undefined }),
            }),
          ),
        ),
        { freq: 2 },
      ),
    })
    .map(({ emptyScope, created_at, mutation, ...rest }) => {
      const b: Record<string, unknown> = { ...rest };
      if (scope !== undefined) b.scope = scope;
      else if (emptyScope) b.scope = '';
      if (created_at !== null) b.created_at = created_at;
      if (mutation) {
        if (mutation.value === undefined) delete b[mutation.field];
        else b[mutation.field] = mutation.value;
      }
      return b;
    });
const anyBody = fc.record(FIELDS, { requiredKeys: [] });
/** A requested scope (undefined: unscoped) and a response body for it. */
const answer = requested.chain((scope) =>
  fc.tuple(
    fc.constant(scope),
    fc.oneof(
      { arbitrary: nearlyValid(scope).map((b) => JSON.stringify(b)), weight: 6 },
      { arbitrary: anyBody.map((b) => JSON.stringify(b) ?? ''), weight: 2 },
      { arbitrary: fc.json(), weight: 1 },
      { arbitrary: text, weight: 1 },
    ),
  ),
);
const status = fc.oneof(
  { arbitrary: fc.constant(200), weight: 6 },
  {
    arbitrary: fc.integer({ min: 200, max: 599 }).filter((s) => ![204, 205, 304].includes(s)),
    weight: 1,
  },
);
const retryAfter = fc.option(
  fc.oneof(
    fc.nat().map(String),
    text.filter((t) => !/[\r\n\0]/.test(t)),
  ),
  {
    nil: undefined,
  },
);

function response(s: number, b: string, retry: string | undefined): Response {
  const headers = new Headers({ 'content-type': 'application/json' });
  try {
    if (retry !== undefined) headers.set('retry-after', retry);
  } catch {
    // not a valid header value: send none
  }
  return new Response(b, { status: s, headers });
}

const isUpstreamError = (error: unknown) =>
  error instanceof UpstreamError ||
  error instanceof UpstreamUnavailableError ||
  error instanceof UpstreamCredentialsRejectedError;

/**
 * The reference oracle, written from the vend API's rules (docs/vend-api.md) and not from the parser: is
 * a 200 with this body text a token for `scope`?
 */
/** The body text as the parser gets it: sent as UTF-8 and decoded (lone surrogates become U+FFFD, a BOM is dropped). */
const received = (text: string) => new TextDecoder().decode(new TextEncoder().encode(text));

function acceptable(text: string, scope: string | undefined): boolean {
  let json: unknown;
  try {
    json = JSON.parse(received(text));
  } catch {
    return false;
  }
  if (typeof json !== 'object' || json === null) return false;
  const b = json as Record<string, unknown>;
  const token = b.access_token;
  const type = b.token_type;
  const expires = b.expires_in;
  const echo = b.scope;
  return (
    typeof token === 'string' &&
    B64TOKEN.test(token) &&
    token.length <= MAX_ACCESS_TOKEN_LENGTH &&
    typeof type === 'string' &&
    type.toLowerCase() === 'bearer' &&
    Number.isInteger(expires) &&
    (expires as number) >= 1 &&
    (expires as number) <= MAX_EXPIRES_IN_SECONDS &&
    (b.created_at === undefined || typeof b.created_at === 'number') &&
    // A scoped token must echo its scope exactly; an unscoped one names none.
    (scope === undefined ? echo === undefined || echo === '' : echo === scope)
  );
}

it(`parses ${RUNS} token responses exactly as the reference oracle says`, async () => {
  let accepted = 0;
  let rejected200 = 0;
  let scopedAccepted = 0;
  let unscopedAccepted = 0;
  await fc.assert(
    fc.asyncProperty(status, answer, retryAfter, async (s, [scope, b], retry) => {
      const verdict = s === 200 && acceptable(b, scope);
      let grant: Awaited<ReturnType<typeof parseTokenResponse>>;
      try {
        grant = await parseTokenResponse(response(s, b, retry), scope);
      } catch (error) {
        expect(isUpstreamError(error)).toBe(true);
        if (error instanceof UpstreamCredentialsRejectedError) expect([401, 403]).toContain(s);
        expect((error as Error).message).not.toContain(b.length > 8 ? b : '\u0000never');
        expect(verdict, 'the oracle accepts what the parser rejected').toBe(false);
        if (s === 200) rejected200++;
        return;
      }
      expect(verdict, 'the oracle rejects what the parser accepted').toBe(true);
      accepted++;
      if (scope !== undefined) scopedAccepted++;
      else unscopedAccepted++;
      const sent = JSON.parse(received(b)) as Record<string, unknown>;
      expect(grant.accessToken).toBe(sent.access_token);
      expect(grant.tokenType).toBe('Bearer');
      expect(grant.expiresIn).toBe(sent.expires_in);
      expect(grant.scope).toBe(scope);
    }),
    { numRuns: RUNS },
  );
  // Coverage: plenty of answers on both sides of the line, scoped ones included.
  expect(accepted).toBeGreaterThan(2000);
  expect(scopedAccepted).toBeGreaterThan(1000);
  expect(unscopedAccepted).toBeGreaterThan(500);
  expect(rejected200).toBeGreaterThan(2000);
  console.info(
    `provider-response: ${accepted} accepted (${scopedAccepted} scoped, ${unscopedAccepted} unscoped), ${rejected200} 200s rejected`,
  );
});

it(`never caches a rejected response: ${RUNS} arbitrary answers through a token service`, async () => {
  const clock = new TestClock({ virtualSleep: true });
  const logger = { info: vi.fn(), warn: vi.fn(), error: vi.fn() };
  await fc.assert(
    fc.asyncProperty(status, answer, async (s, [scope, b]) => {
      const store = new MemoryTokenStore();
      const service = new TokenService({
        store,
        sealer: SHARED_SEALER,
        credentials: new StaticCredentials(CREDS),
        mint: (_credentials, asked) => parseTokenResponse(response(s, b, undefined), asked),
        clock,
        random: () => 0.5,
        logger,
        instanceId: 'fuzz',
      });
      const key = scope === undefined ? 'TOKEN#~unscoped' : `TOKEN#${scope}`;
      let served: Awaited<ReturnType<TokenService['getToken']>> | undefined;
      try {
        served = await service.getToken(scope, 0);
      } catch (error) {
        expect(isUpstreamError(error)).toBe(true);
        expect(store.items.get(key)?.token).toBeUndefined();
        expect(store.items.get(key)?.leaseOwner).toBeUndefined();
        await expect(service.getToken(scope, 0)).rejects.toSatisfy(isUpstreamError);
        return;
      }
      expect(s === 200 && acceptable(b, scope)).toBe(true);
      expect(store.items.get(key)?.token?.expiresAt).toBe(served.token.expiresAt);
      expect(served.token.scope).toBe(scope);
    }),
    { numRuns: RUNS },
  );
});
