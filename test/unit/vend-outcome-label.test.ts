/**
 * The outcome a vend is counted and logged under (the dashboard's "vends by
 * outcome"): degraded, then waited, then refreshed, else the tier it came from.
 */
import { describe, expect, it } from 'vitest';
import { AccessPolicy } from '../../functions/core/access-policy.js';
import { fixedPolicy } from '../../functions/core/policy-source.js';
import { outcome, type VendOutcome } from '../../functions/core/token-service-types.js';
import { createVendApp } from '../../functions/vend-token/app.js';
import { TestClock } from '../support/clock.js';
import { CALLER_ARN, urlEvent } from '../support/vend-harness.js';

const NOW_MS = Date.UTC(2030, 0, 1, 0, 0, 0, 250);

const POLICY = AccessPolicy.parse(
  JSON.stringify({
    scopes: ['ba_demo_1'],
    grants: [{ principal: 'arn:aws:iam::111122223333:role/checkout', scopes: ['ba_demo_1'] }],
  }),
);

/** Vends once through the app with a token service answering `served`; returns what was counted and logged. */
async function vendWith(served: VendOutcome): Promise<{ counted: string[]; logged: unknown[] }> {
  const counted: string[] = [];
  const logged: unknown[] = [];
  const app = createVendApp({
    tokens: {
      getToken: async () => ({
        token: {
          accessToken: 'tok_abc',
          tokenType: 'Bearer',
          scope: 'ba_demo_1',
          issuedAt: Math.floor(NOW_MS / 1000),
          expiresAt: Math.floor(NOW_MS / 1000) + 7200,
          credentialsVersion: 'v1',
        },
        outcome: served,
      }),
    },
    policy: fixedPolicy(POLICY),
    logger: {
      info: (_message, ...extra) => {
        logged.push(extra[0]);
      },
      warn: () => {},
      error: () => {},
    },
    clock: new TestClock({ frozenAt: NOW_MS }),
    recordVend: (label) => {
      counted.push(label);
    },
  });
  const result = await app(urlEvent({ query: 'scope=ba_demo_1', arn: CALLER_ARN }));
  expect(result).toMatchObject({ statusCode: 200 });
  return { counted, logged };
}

describe('the outcome a vend is counted under', () => {
  it.each([
    ['l1', outcome('l1')],
    ['l2', outcome('l2')],
    ['provider', outcome('provider')],
    ['refreshed', outcome('provider', { refreshed: true })],
    ['waited', outcome('l2', { waited: true })],
    ['waited', outcome('provider', { waited: true, refreshed: true })],
    ['degraded', outcome('provider', { degraded: true })],
    ['degraded', outcome('l2', { degraded: true, waited: true })],
  ])('is %s for %j', async (label, served) => {
    const { counted, logged } = await vendWith(served);

    expect(counted).toEqual([label]);
    expect(logged).toEqual([expect.objectContaining({ status: 200, outcome: label })]);
  });
});
