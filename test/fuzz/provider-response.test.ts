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
const requested = fc.option(fc.constantFrom('ba_1', 'ba_2'), { nil: undefined });
const tokenBody = fc.record(
  {
    access_token: fc.oneof(
      fc.stringMatching(/^[A-Za-z0-9\-._~+/]{1,60}=*$/),
      text,
      fc.constant('x'.repeat(MAX_ACCESS_TOKEN_LENGTH + 1)),
      fc.anything(),
    ),
    token_type: fc.oneof(fc.constantFrom('Bearer', 'bearer', 'BEARER', 'mac', ''), fc.anything()),
    expires_in: fc.oneof(
      fc.integer({ min: -5, max: MAX_EXPIRES_IN_SECONDS + 5 }),
      fc.double(),
      fc.constantFrom(7200, '7200', null),
      fc.anything(),
    ),
    scope: fc.oneof(fc.constantFrom('ba_1', 'ba_2', ''), text, fc.anything()),
    created_at: fc.oneof(fc.integer(), fc.double(), fc.anything()),
  },
  { requiredKeys: [] },
);
const body = fc.oneof(
  { arbitrary: tokenBody.map((b) => JSON.stringify(b) ?? ''), weight: 4 },
  { arbitrary: fc.json(), weight: 1 },
  { arbitrary: text, weight: 1 },
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

it(`parses ${RUNS} arbitrary token responses into a valid grant or an upstream error`, async () => {
  let accepted = 0;
  await fc.assert(
    fc.asyncProperty(status, body, retryAfter, requested, async (s, b, retry, scope) => {
      let grant: Awaited<ReturnType<typeof parseTokenResponse>>;
      try {
        grant = await parseTokenResponse(response(s, b, retry), scope);
      } catch (error) {
        expect(isUpstreamError(error)).toBe(true);
        if (error instanceof UpstreamCredentialsRejectedError) expect([401, 403]).toContain(s);
        expect((error as Error).message).not.toContain(b.length > 8 ? b : '\u0000never');
        return;
      }
      accepted++;
      expect(s).toBe(200);
      expect(grant.accessToken).toMatch(B64TOKEN);
      expect(grant.accessToken.length).toBeLessThanOrEqual(MAX_ACCESS_TOKEN_LENGTH);
      expect(Number.isInteger(grant.expiresIn)).toBe(true);
      expect(grant.expiresIn).toBeGreaterThanOrEqual(1);
      expect(grant.expiresIn).toBeLessThanOrEqual(MAX_EXPIRES_IN_SECONDS);
      expect(grant.scope).toBe(scope);
    }),
    { numRuns: RUNS },
  );
  expect(accepted).toBeGreaterThan(0);
});

it(`never caches a rejected response: ${RUNS} arbitrary answers through a token service`, async () => {
  const clock = new TestClock({ virtualSleep: true });
  const logger = { info: vi.fn(), warn: vi.fn(), error: vi.fn() };
  await fc.assert(
    fc.asyncProperty(status, body, requested, async (s, b, scope) => {
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
      expect(store.items.get(key)?.token?.expiresAt).toBe(served.token.expiresAt);
      expect(served.token.scope).toBe(scope);
    }),
    { numRuns: RUNS },
  );
});
