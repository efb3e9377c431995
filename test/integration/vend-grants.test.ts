/**
 * GET /grants, "what am I allowed?": the calling principal as the function
 * sees it and what the access policy grants it. Never a token, never another
 * principal's grants, no call to the provider.
 */
import { describe, expect, it } from 'vitest';
import { AccessPolicy } from '../../functions/core/access-policy.js';
import { fixedPolicy, PolicySource } from '../../functions/core/policy-source.js';
import { TestClock } from '../support/clock.js';
import { useSimulatorAndTable } from '../support/simulator-and-table.js';
import {
  CALLER_ARN,
  makeInstance,
  PARTNER_ARN,
  quietLogger,
  STRANGER_ARN,
  urlEvent,
  vend,
} from '../support/vend-harness.js';

const shared = useSimulatorAndTable();

const POLICY = AccessPolicy.parse(
  JSON.stringify({
    scopes: ['ba_demo_2', 'ba_demo_1', 'ba_other'],
    grants: [
      { principal: 'arn:aws:iam::111122223333:role/checkout', scopes: ['ba_demo_2', 'ba_demo_1'] },
      { principal: 'arn:aws:iam::111122223333:role/key-issuer', unscoped: true },
      { principal: 'arn:aws:iam::111122223333:role/support', scopes: ['*'] },
    ],
  }),
);

function instance(policy = fixedPolicy(POLICY, 'v7')) {
  return makeInstance({
    sim: shared.sim,
    clock: new TestClock(),
    client: shared.client,
    table: shared.table,
    policy,
  });
}

describe('GET /grants', () => {
  it('answers the caller, its scopes (sorted) and unscoped access, and the policy version', async () => {
    const answer = await vend(instance(), urlEvent({ path: '/grants', arn: CALLER_ARN }));

    expect(answer.status).toBe(200);
    expect(answer.headers['cache-control']).toBe('no-store');
    expect(answer.body).toEqual({
      principal: CALLER_ARN,
      scopes: ['ba_demo_1', 'ba_demo_2'],
      unscoped: false,
      policy_version: 'v7',
    });
  });

  it.each([
    ['the unscoped token only', PARTNER_ARN, { scopes: [], unscoped: true }],
    [
      'every scope of a "*" grant',
      'arn:aws:sts::111122223333:assumed-role/support/s',
      { scopes: ['ba_demo_1', 'ba_demo_2', 'ba_other'], unscoped: false },
    ],
    ['nothing, for a caller of another account', STRANGER_ARN, { scopes: [], unscoped: false }],
    [
      "its role's grants, for a caller that is the role ARN itself (a local identity)",
      'arn:aws:iam::111122223333:role/checkout',
      { scopes: ['ba_demo_1', 'ba_demo_2'], unscoped: false },
    ],
  ])('answers %s', async (_label, arn, granted) => {
    const answer = await vend(instance(), urlEvent({ path: '/grants', arn }));

    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ principal: arn, ...granted, policy_version: 'v7' });
  });

  it('names no other principal, holds no token, and calls nobody upstream', async () => {
    const runtime = instance();
    await vend(runtime, urlEvent({ query: 'scope=ba_demo_1' }));
    const before = shared.sim.stats.tokenRequests;

    const answer = await vend(runtime, urlEvent({ path: '/grants', arn: CALLER_ARN }));

    const text = JSON.stringify(answer.body);
    expect(text).not.toMatch(/key-issuer|support|access_token|expires/);
    expect(shared.sim.stats.tokenRequests).toBe(before);
  });

  it.each([
    ['401 without an identity', urlEvent({ path: '/grants', arn: null }), 401, 'unauthenticated'],
    ['401 for an empty identity', urlEvent({ path: '/grants', arn: '' }), 401, 'unauthenticated'],
    [
      '400 with a query',
      urlEvent({ path: '/grants', query: 'scope=ba_demo_1' }),
      400,
      'invalid_request',
    ],
    ['405 for POST', urlEvent({ path: '/grants', method: 'POST' }), 405, 'method_not_allowed'],
  ])('answers %s', async (_label, event, status, code) => {
    const answer = await vend(instance(), event);

    expect(answer.status).toBe(status);
    expect(answer.body.code).toBe(code);
  });

  it('answers 503 with Retry-After while no valid policy is loaded, never a grant', async () => {
    const policy = new PolicySource({
      fetch: async () => ({ text: '{"scopes":' }),
      source: 'test',
      maxAgeSeconds: 60,
      clock: new TestClock(),
      logger: quietLogger(),
    });

    const answer = await vend(instance(policy), urlEvent({ path: '/grants' }));

    expect(answer.status).toBe(503);
    expect(answer.body.code).toBe('upstream_unavailable');
    // The store answered (an invalid document): it is asked again after the max age.
    expect(answer.headers['retry-after']).toBe('60');
  });
});

describe('a caller that is a role ARN itself (a local identity with a role ARN)', () => {
  const ROLE_ARN = 'arn:aws:iam::111122223333:role/checkout';

  it("is vended the scopes its role's grant names, and no others", async () => {
    const runtime = instance();

    const granted = await vend(runtime, urlEvent({ query: 'scope=ba_demo_1', arn: ROLE_ARN }));
    const other = await vend(runtime, urlEvent({ query: 'scope=ba_other', arn: ROLE_ARN }));

    expect(granted.status).toBe(200);
    expect(other.status).toBe(403);
    expect(other.body.code).toBe('access_denied');
  });
});
