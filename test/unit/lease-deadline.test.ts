import { describe, expect, it } from 'vitest';
import type { Minter } from '../../functions/core/token-service.js';
import { setup, storeToken } from '../support/token-service-fixture.js';

const LATE_ANSWER_SECONDS = 3;

/**
 * A lease holder's requests to the provider must end before its lease does:
 * waiters take an expired lease over, and a request still out then could
 * mint a second token. The lease runs from when it was written, which is
 * earlier than when the write's answer reached the holder.
 */
describe("a lease holder's mint deadline", () => {
  it.each([
    ['a first look that created the item', 'leaseIfAbsent', false],
    ['a lease attempt on an item already there', 'tryAcquireLease', true],
  ] as const)(
    'counts from the lease write, not from its late answer: %s',
    async (_, method, existing) => {
      // Regression (review): the deadline was counted from when the mint
      // started, so an answer that came 3 s late gave the holder 3 s past its lease.
      const t = setup();
      if (existing)
        await storeToken(t, 'ba_1', { accessToken: 'old', version: 'v1', secondsLeft: 100 });
      let writtenAt = 0;
      const real = (t.store[method] as (...args: unknown[]) => Promise<unknown>).bind(t.store);
      Object.assign(t.store, {
        [method]: async (...args: unknown[]) => {
          writtenAt = args[2] as number;
          const answer = await real(...args);
          t.clock.advance(LATE_ANSWER_SECONDS);
          return answer;
        },
      });
      const deadlines: Array<{ deadline: number; askedAt: number }> = [];
      const recording: Minter = (credentials, scope, deadline) => {
        deadlines.push({ deadline, askedAt: t.clock.now() });
        return t.provider.mint(credentials, scope, deadline);
      };

      const result = await t.instance('h', t.credentials, recording).getToken('ba_1', 300);

      expect(result.outcome).toMatchObject({ tier: 'provider' });
      expect(deadlines).toHaveLength(1);
      // Half a second before one lease period from the write, even when the
      // lease's end was pushed 1 ms later (the second attempt of this
      // millisecond: the first look came just before).
      expect(deadlines[0]?.deadline).toBe(writtenAt + 10_000 - 500);
      expect(deadlines[0]?.askedAt).toBe(writtenAt + LATE_ANSWER_SECONDS * 1000);
    },
  );
});
