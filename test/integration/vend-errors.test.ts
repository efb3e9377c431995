import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { DynamoDbTokenStore } from '../../functions/adapters/dynamodb-token-store.js';
import type { CredentialsSource, ProviderCredentials } from '../../functions/core/ports.js';
import {
  DEMO_PROVIDER_CREDENTIALS,
  type ProviderSimulator,
  startProviderSimulator,
} from '../../local/provider-simulator.js';
import { TestClock } from '../support/clock.js';
import { createTestTable, dynamoClient } from '../support/dynamodb.js';
import {
  makeInstance,
  quietLogger,
  STRANGER_ARN,
  urlEvent,
  vend,
} from '../support/vend-harness.js';

let sim: ProviderSimulator;
let client: DynamoDBClient;
let table: string;

beforeAll(async () => {
  sim = await startProviderSimulator();
  client = dynamoClient();
});
afterAll(async () => {
  await sim.close();
  client.destroy();
});
beforeEach(async () => {
  sim.reset();
  table = await createTestTable(client);
});

const instance = (extra: { credentials?: CredentialsSource } = {}) =>
  makeInstance({ sim, clock: new TestClock({ virtualSleep: true }), client, table, ...extra });

function expectProblem(
  result: { status: number; headers: Record<string, string>; body: Record<string, unknown> },
  status: number,
  code: string,
) {
  expect(result.status).toBe(status);
  expect(result.headers['content-type']).toBe('application/problem+json');
  expect(result.body).toEqual({
    status,
    code,
    title: expect.any(String),
    detail: expect.any(String),
  });
}

describe('vend API answers', () => {
  it('200 with the documented body and headers', async () => {
    const result = await vend(instance(), urlEvent({ query: 'scope=ba_demo_1&min_ttl=60' }));

    expect(result.status).toBe(200);
    expect(result.headers['content-type']).toBe('application/json');
    expect(result.headers['cache-control']).toBe('no-store');
    expect(Object.keys(result.body).sort()).toEqual(
      ['access_token', 'expires_at', 'expires_in', 'scope', 'token_type'].sort(),
    );
    expect(result.body.token_type).toBe('Bearer');
    expect(result.body.scope).toBe('ba_demo_1');
    expect(result.body.expires_in).toBeGreaterThan(7190);
  });

  it('GET /healthz answers ok without calling the provider', async () => {
    const result = await vend(instance(), urlEvent({ path: '/healthz', arn: null }));

    expect(result.status).toBe(200);
    expect(result.body).toEqual({ status: 'ok' });
    expect(sim.stats.tokenRequests).toBe(0);
  });

  it.each([
    ['scope=.bad', 'bad scope syntax'],
    ['scope=ba_demo_1&scope=ba_demo_2', 'repeated scope'],
    ['min_ttl=3601', 'min_ttl too large'],
    ['min_ttl=ten', 'min_ttl not an integer'],
    ['min_ttl=1&min_ttl=2', 'repeated min_ttl'],
  ])('400 invalid_request for %s (%s), whoever asks', async (query) => {
    const logger = quietLogger();
    const logged = vi.spyOn(logger, 'info');
    const result = await vend(
      makeInstance({ sim, clock: new TestClock(), client, table, logger }),
      urlEvent({ query, arn: STRANGER_ARN }),
    );

    expectProblem(result, 400, 'invalid_request');
    expect(sim.stats.tokenRequests).toBe(0);
    // Regression: its audit line said scope "unscoped", as for a partner token.
    expect(logged).toHaveBeenCalledWith(
      'vend',
      expect.objectContaining({ scope: null, status: 400, code: 'invalid_request' }),
    );
  });

  it('401 unauthenticated without an IAM identity', async () => {
    expectProblem(
      await vend(instance(), urlEvent({ query: 'scope=ba_demo_1', arn: null })),
      401,
      'unauthenticated',
    );
  });

  it('401 unauthenticated for an empty IAM identity, not a judgement of it', async () => {
    expectProblem(
      await vend(instance(), urlEvent({ query: 'scope=ba_demo_1', arn: '' })),
      401,
      'unauthenticated',
    );
  });

  it('expires_in is the whole seconds left now: expires_at less the current second', async () => {
    // Prepare: a clock standing mid-second, so whole seconds never straddle a real one.
    const clock = new TestClock({
      frozenAt: Date.UTC(2030, 0, 1, 0, 0, 0, 600),
      virtualSleep: true,
    });
    const runtime = makeInstance({ sim, clock, client, table });
    const first = await vend(runtime, urlEvent({ query: 'scope=ba_demo_1' }));
    clock.advance(100);

    // Act
    const later = await vend(runtime, urlEvent({ query: 'scope=ba_demo_1' }));

    // Assess
    const nowSeconds = Math.floor(clock.now() / 1000);
    expect(later.body.expires_at).toBe(first.body.expires_at);
    expect(later.body.expires_in).toBe((later.body.expires_at as number) - nowSeconds);
    expect(first.body.expires_in).toBe((first.body.expires_at as number) - (nowSeconds - 100));
  });

  it('403 access_denied alike for ungranted and unconfigured scopes', async () => {
    const ungranted = await vend(
      instance(),
      urlEvent({ query: 'scope=ba_demo_1', arn: STRANGER_ARN }),
    );
    const unknown = await vend(instance(), urlEvent({ query: 'scope=ba_unknown' }));

    expectProblem(ungranted, 403, 'access_denied');
    expectProblem(unknown, 403, 'access_denied');
    expect(unknown.body.detail).toBe(ungranted.body.detail);
    expect(sim.stats.tokenRequests).toBe(0);
  });

  it('403 access_denied for the unscoped token without an unscoped grant', async () => {
    expectProblem(await vend(instance(), urlEvent({})), 403, 'access_denied');
  });

  it('404 not_found for other paths and 405 method_not_allowed with Allow: GET', async () => {
    const missing = await vend(instance(), urlEvent({ path: '/tokens' }));
    const post = await vend(instance(), urlEvent({ method: 'POST' }));

    expectProblem(missing, 404, 'not_found');
    expectProblem(post, 405, 'method_not_allowed');
    expect(post.headers.allow).toBe('GET');
  });

  it('502 upstream_credentials_rejected when the provider answers 401 to key and secret', async () => {
    sim.setCredentials({ key: 'other', secret: 'other-secret' });

    const result = await vend(instance(), urlEvent({ query: 'scope=ba_demo_1' }));

    expectProblem(result, 502, 'upstream_credentials_rejected');
    expect(sim.stats.tokenRequests).toBe(1);
  });

  it('re-reads the secret once after a 401 and succeeds with the rotated pair', async () => {
    // Prepare: the cached secret is stale; a forced re-read returns the new version
    const rotated = { key: 'rotated', secret: 'rotated-secret-value' };
    sim.setCredentials(rotated);
    const reads: boolean[] = [];
    const credentials: CredentialsSource = {
      async get(options): Promise<ProviderCredentials> {
        reads.push(options?.forceRefresh === true);
        return reads.includes(true)
          ? { ...rotated, version: 'v2' }
          : { ...DEMO_PROVIDER_CREDENTIALS, version: 'v1' };
      },
    };

    // Act
    const result = await vend(instance({ credentials }), urlEvent({ query: 'scope=ba_demo_1' }));

    // Assess
    expect(result.status).toBe(200);
    expect(reads.filter(Boolean)).toHaveLength(1);
    expect(sim.stats.tokenRequests).toBe(2);
    const item = await new DynamoDbTokenStore(client, table).get('TOKEN#ba_demo_1');
    expect(item?.token?.credentialsVersion).toBe('v2');
  });

  it.each([
    [{ kind: 'malformed' } as const],
    [{ kind: 'wrongTokenType' } as const],
    [{ kind: 'missingExpiresIn' } as const],
    [{ kind: 'expiresIn', value: 0 } as const],
    [{ kind: 'wrongScope' } as const],
    [{ kind: 'status', status: 400 } as const],
  ])('502 upstream_error for %j, and the bad token is never cached', async (fault) => {
    sim.injectTokenFault(fault);
    const clock = new TestClock({ virtualSleep: true });

    const bad = await vend(
      makeInstance({ sim, clock, client, table }),
      urlEvent({ query: 'scope=ba_demo_1' }),
    );
    const cached = await new DynamoDbTokenStore(client, table).get('TOKEN#ba_demo_1');
    clock.advance(6); // past the 5 s back-off after a failed refresh
    const good = await vend(
      makeInstance({ sim, clock, client, table }),
      urlEvent({ query: 'scope=ba_demo_1' }),
    );

    expectProblem(bad, 502, 'upstream_error');
    expect(cached?.token).toBeUndefined();
    expect(sim.stats.tokenRequests).toBe(2);
    expect(good.status).toBe(200);
  });

  it('503 upstream_unavailable with Retry-After when the provider keeps failing', async () => {
    sim.injectTokenFault({ kind: 'status', status: 503, retryAfter: 1 }, 3);

    const result = await vend(instance(), urlEvent({ query: 'scope=ba_demo_1' }));

    expectProblem(result, 503, 'upstream_unavailable');
    expect(Number(result.headers['retry-after'])).toBeGreaterThan(0);
    expect(sim.stats.tokenRequests).toBe(3);
  });

  it('never tells the failing caller to come back sooner than the back-off its failure starts', async () => {
    // Regression: the provider's Retry-After: 0 was passed on, and the retry
    // then landed in the 5 s back-off and got another 503.
    sim.injectTokenFault({ kind: 'status', status: 503, retryAfter: 0 }, 3);

    const first = await vend(instance(), urlEvent({ query: 'scope=ba_demo_1' }));
    const retried = await vend(instance(), urlEvent({ query: 'scope=ba_demo_1' }));

    expectProblem(first, 503, 'upstream_unavailable');
    expect(first.headers['retry-after']).toBe('5');
    expectProblem(retried, 503, 'upstream_unavailable');
    expect(sim.stats.tokenRequests).toBe(3);
  });

  it('503 quickly for other callers right after a failed refresh, without calling again', async () => {
    sim.injectTokenFault({ kind: 'status', status: 500 }, 3);
    await vend(instance(), urlEvent({ query: 'scope=ba_demo_1' }));

    const second = await vend(instance(), urlEvent({ query: 'scope=ba_demo_1' }));

    expectProblem(second, 503, 'upstream_unavailable');
    expect(sim.stats.tokenRequests).toBe(3);
  });

  it('500 internal_error with no details for anything else', async () => {
    const credentials: CredentialsSource = {
      get: () => Promise.reject(new Error('secret store exploded: s3cr3t')),
    };

    const result = await vend(instance({ credentials }), urlEvent({ query: 'scope=ba_demo_1' }));

    expectProblem(result, 500, 'internal_error');
    expect(JSON.stringify(result.body)).not.toContain('s3cr3t');
  });
});
