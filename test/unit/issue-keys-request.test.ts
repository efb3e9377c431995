/**
 * The time one id's keys request can take, on the injected clock: the key job
 * keeps that much back at the end of an invocation (issue-keys/handler.ts).
 */
import { describe, expect, it, vi } from 'vitest';
import { DEFAULT_RETRY_BUDGET_MS, DEFAULT_TIMEOUT_MS } from '../../client/index.js';
import { idStartDeadline } from '../../functions/issue-keys/job.js';
import { longestKeysRequestMs, requestKeys } from '../../functions/issue-keys/keys-request.js';
import { TestClock } from '../support/clock.js';

describe('the longest keys request', () => {
  it('stays within longestKeysRequestMs when every step takes as long as it may', async () => {
    // Prepare: each token fetch takes the client's whole timeout; the first
    // attempt gets a 401, every later one a 503 asking for the longest wait
    // the job honours, each answered at the attempt's timeout.
    const clock = new TestClock({ virtualSleep: true, frozenAt: Date.UTC(2030, 0, 1) });
    const started = clock.now();
    let attempts = 0;
    const fetch = vi.fn(async () => {
      attempts++;
      clock.advance(10);
      return attempts === 1
        ? new Response('{}', { status: 401 })
        : new Response('{}', { status: 503, headers: { 'retry-after': '10' } });
    });
    const tokens = {
      getToken: async () => {
        clock.advance(DEFAULT_TIMEOUT_MS / 1000);
        return { accessToken: 'unscoped-token', tokenType: 'Bearer' as const, expiresAt: 0 };
      },
      invalidate: () => undefined,
    };

    // Act
    const failure = await requestKeys(
      {
        fetch: fetch as unknown as typeof globalThis.fetch,
        clock,
        random: () => 0.99,
        tokens,
        logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
        count: () => undefined,
      },
      { baseUrl: 'https://api.provider.example' },
      { businessApplicationId: 'ba_1', idempotencyKey: 'k1', beforeAttempt: async () => {} },
    ).catch((error: unknown) => error);

    // Assess: it gave up as designed, and took exactly the bound
    expect(failure).toMatchObject({ status: 503 });
    expect(attempts).toBe(4);
    expect(clock.now() - started).toBe(longestKeysRequestMs(DEFAULT_TIMEOUT_MS));
  });
});

describe('when a run stops starting ids', () => {
  const longest = longestKeysRequestMs(Math.max(DEFAULT_TIMEOUT_MS, DEFAULT_RETRY_BUDGET_MS));
  const now = Date.UTC(2030, 0, 1);

  it('keeps back the longest id and a 15 s margin, so the last id started ends before the function', () => {
    const remaining = 600_000;

    const deadline = idStartDeadline(now, remaining, longest);

    expect(deadline + longest + 15_000).toBe(now + remaining);
  });

  it('still gives a short invocation half its time', () => {
    expect(idStartDeadline(now, 100_000, longest)).toBe(now + 50_000);
  });
});
