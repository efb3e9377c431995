import { describe, expect, it } from 'vitest';
import { DynamoDbKeyJobIndex } from '../../functions/adapters/dynamodb-key-job-index.js';
import { DynamoDbKeyJobStore } from '../../functions/adapters/dynamodb-key-job-store.js';
import { DynamoDbTokenStore } from '../../functions/adapters/dynamodb-token-store.js';
import { type AdminDeps, createAdmin } from '../../functions/admin/admin.js';
import { AdminError } from '../../functions/admin/admin-event.js';
import type { StatusReport } from '../../functions/admin/status.js';
import {
  StoreUnavailableError,
  UpstreamCredentialsRejectedError,
} from '../../functions/core/errors.js';
import { fixedPolicy } from '../../functions/core/policy-source.js';
import { KeyIssuingFailedError, KeyJobStoreError } from '../../functions/issue-keys/errors.js';
import type { ClearPendingKeyRequest } from '../../functions/issue-keys/event.js';
import { forceRefresh } from '../../functions/refresh/force-refresh.js';
import type { VendRuntime } from '../../functions/vend-token/runtime.js';
import { TestClock } from '../support/clock.js';
import { capturingLogger } from '../support/key-job-harness.js';
import { useSimulatorAndTable } from '../support/simulator-and-table.js';
import {
  makeInstance,
  PARTNER_ARN,
  quietLogger,
  TEST_POLICY,
  urlEvent,
  vend,
} from '../support/vend-harness.js';

const shared = useSimulatorAndTable();

function world(overrides: Partial<AdminDeps> = {}) {
  const clock = new TestClock({ virtualSleep: true, frozenAt: 1_800_000_000_500 });
  const store = new DynamoDbTokenStore(shared.client, shared.table);
  const jobs = new DynamoDbKeyJobStore(shared.client, shared.table);
  const vendInstance = makeInstance({
    sim: shared.sim,
    clock,
    client: shared.client,
    table: shared.table,
  });
  const adminInstance: VendRuntime = makeInstance({
    sim: shared.sim,
    clock,
    client: shared.client,
    table: shared.table,
  });
  const issued: Array<Record<string, unknown>> = [];
  const cleared: ClearPendingKeyRequest[] = [];
  const admin = createAdmin({
    store,
    jobs: new DynamoDbKeyJobIndex(shared.client, shared.table),
    refresh: (scope) => forceRefresh(adminInstance.tokens, scope),
    issueKeys: async (event) => {
      issued.push(event);
      return { issued: ['ba_demo_1'], skipped: [], failed: [] };
    },
    policy: fixedPolicy(TEST_POLICY),
    clearPendingKey: async (request) => {
      cleared.push(request);
      return {
        business_application_id: request.businessApplicationId,
        cleared_idempotency_key: 'k1',
        state: 'rejected',
        note: 'n',
      };
    },
    inUseWindowSeconds: 3600,
    clock,
    logger: quietLogger(),
    ...overrides,
  });
  return { clock, store, jobs, vendInstance, admin, issued, cleared };
}

describe('admin: status', () => {
  it('shows each cached scope (the unscoped one as "unscoped"), its times, lease, use and key jobs, never a token', async () => {
    // Prepare: two vends, a lease held on a third scope, a pending key job
    const w = world();
    const scoped = await vend(w.vendInstance, urlEvent({ query: 'scope=ba_demo_1' }));
    const unscoped = await vend(w.vendInstance, urlEvent({ arn: PARTNER_ARN }));
    await w.store.tryAcquireLease(
      'TOKEN#ba_demo_2',
      'instance-x',
      w.clock.now(),
      w.clock.now() + 600_000,
    );
    await w.jobs.acquire('ba_demo_1', 'run-1', w.clock.now(), w.clock.now() + 60_000);
    w.clock.advance(100);

    // Act
    const status = (await w.admin({ action: 'status' })) as StatusReport;

    // Assess
    const text = JSON.stringify(status);
    expect(text).not.toContain(scoped.body.access_token as string);
    expect(text).not.toContain(unscoped.body.access_token as string);
    const byScope = Object.fromEntries(status.tokens.map((t) => [t.scope, t]));
    expect(Object.keys(byScope).sort()).toEqual(['ba_demo_1', 'ba_demo_2', 'unscoped']);
    expect(byScope.ba_demo_1).toMatchObject({
      state: 'valid',
      expires_at: scoped.body.expires_at,
      seconds_left: (scoped.body.expires_at as number) - status.now,
      lease: { held: false },
      in_use: true,
    });
    expect(byScope.ba_demo_1?.issued_at).toBe((scoped.body.expires_at as number) - 7200);
    expect(byScope.unscoped).toMatchObject({ state: 'valid', in_use: true });
    expect(byScope.ba_demo_2).toMatchObject({
      state: 'unusable',
      lease: { held: true, owner: 'instance-x' },
      in_use: false,
    });
    expect(status.key_jobs).toEqual([
      expect.objectContaining({ business_application_id: 'ba_demo_1', awaiting_store: false }),
    ]);
  });

  it('reports a scope in use while vended within the window or since its token was minted, and not after', async () => {
    const w = world();
    await vend(w.vendInstance, urlEvent({ query: 'scope=ba_demo_1' }));
    w.clock.advance(3601);
    const stillCachedByACaller = (await w.admin({ action: 'status' })) as StatusReport;
    await w.admin({ action: 'refresh', scope: 'ba_demo_1' });

    const abandoned = (await w.admin({ action: 'status' })) as StatusReport;

    expect(stillCachedByACaller.tokens[0]).toMatchObject({ scope: 'ba_demo_1', in_use: true });
    expect(abandoned.tokens[0]).toMatchObject({ scope: 'ba_demo_1', in_use: false });
  });
});

describe('admin: failures', () => {
  const timedOut = 'DynamoDB Scan failed (TimeoutError)';
  // Regression: a failed key-job listing answered job_store_unavailable, so a
  // status with DynamoDB down answered one of two codes, whichever listing
  // failed first; docs/operations.md names store_unavailable.
  it.each([
    [
      'key-job listing',
      'store_unavailable',
      { jobs: { list: () => Promise.reject(new KeyJobStoreError(timedOut)) } },
    ],
    [
      'token listing',
      'store_unavailable',
      {
        store: {
          list: () => Promise.reject(new StoreUnavailableError(timedOut)),
          delete: () => Promise.resolve(false),
        },
      },
    ],
  ] as const)(
    'a status whose %s fails answers store_unavailable, once',
    async (_case, code, broken) => {
      const w = world(broken as Partial<AdminDeps>);

      const error = await w.admin({ action: 'status' }).catch((e: unknown) => e);

      expect(error).toMatchObject({ code });
      expect(String((error as Error).message)).toBe(`${code}: ${timedOut}`);
    },
  );
});

describe('admin: invalidate', () => {
  it('takes the short form {"all":true}, without an action, as invalidate all', async () => {
    const w = world();
    await vend(w.vendInstance, urlEvent({ query: 'scope=ba_demo_1' }));
    await vend(w.vendInstance, urlEvent({ arn: PARTNER_ARN }));

    const all = await w.admin({ all: true });
    const after = (await w.admin({ action: 'status' })) as StatusReport;

    expect(all).toMatchObject({ invalidated: expect.arrayContaining(['ba_demo_1', 'unscoped']) });
    expect(after.tokens).toEqual([]);
  });

  it('removes one scope, and with all every cached scope; the next vend mints anew', async () => {
    const w = world();
    await vend(w.vendInstance, urlEvent({ query: 'scope=ba_demo_1' }));
    await vend(w.vendInstance, urlEvent({ query: 'scope=ba_demo_2' }));
    await vend(w.vendInstance, urlEvent({ arn: PARTNER_ARN }));

    const one = await w.admin({ action: 'invalidate', scope: 'ba_demo_1' });
    const afterOne = (await w.admin({ action: 'status' })) as StatusReport;
    const all = await w.admin({ action: 'invalidate', all: true });
    const afterAll = (await w.admin({ action: 'status' })) as StatusReport;
    const fresh = makeInstance({
      sim: shared.sim,
      clock: w.clock,
      client: shared.client,
      table: shared.table,
    });
    const before = shared.sim.stats.tokenRequests;
    await vend(fresh, urlEvent({ query: 'scope=ba_demo_1' }));

    expect(one).toMatchObject({ invalidated: ['ba_demo_1'] });
    expect(afterOne.tokens.map((t) => t.scope).sort()).toEqual(['ba_demo_2', 'unscoped']);
    expect((all as { invalidated: string[] }).invalidated.sort()).toEqual([
      'ba_demo_2',
      'unscoped',
    ]);
    expect(afterAll.tokens).toEqual([]);
    expect(shared.sim.stats.tokenRequests).toBe(before + 1);
  });

  it('invalidates the unscoped token by the name "unscoped"', async () => {
    const w = world();
    await vend(w.vendInstance, urlEvent({ arn: PARTNER_ARN }));

    await w.admin({ action: 'invalidate', scope: 'unscoped' });

    expect(await w.store.get('TOKEN#~unscoped')).toBeUndefined();
  });

  it('reports a scope with nothing cached as not_cached, not as invalidated', async () => {
    const w = world();
    await vend(w.vendInstance, urlEvent({ query: 'scope=ba_demo_1' }));

    const typo = await w.admin({ action: 'invalidate', scope: 'ba_demo_9' });
    const cached = await w.admin({ action: 'invalidate', scope: 'ba_demo_1' });
    const again = await w.admin({ action: 'invalidate', scope: 'ba_demo_1' });

    expect(typo).toMatchObject({ invalidated: [], not_cached: ['ba_demo_9'] });
    expect(cached).toMatchObject({ invalidated: ['ba_demo_1'], not_cached: [] });
    expect(again).toMatchObject({ invalidated: [], not_cached: ['ba_demo_1'] });
  });
});

describe('admin: refresh', () => {
  it('mints a new token under the lease that every instance then serves', async () => {
    // Prepare
    const w = world();
    const first = await vend(w.vendInstance, urlEvent({ query: 'scope=ba_demo_1' }));
    w.clock.advance(10);

    // Act
    const result = await w.admin({ action: 'refresh', scope: 'ba_demo_1' });
    const other = await vend(
      makeInstance({ sim: shared.sim, clock: w.clock, client: shared.client, table: shared.table }),
      urlEvent({ query: 'scope=ba_demo_1' }),
    );

    // Assess
    expect(result).toEqual({
      scope: 'ba_demo_1',
      status: 'refreshed',
      expires_at: (first.body.expires_at as number) + 10,
    });
    expect(other.body.expires_at).toBe((first.body.expires_at as number) + 10);
    expect(other.body.access_token).not.toBe(first.body.access_token);
    expect(shared.sim.stats.tokenRequests).toBe(2);
  });

  it('answers busy while another caller holds the lease, without minting', async () => {
    const w = world();
    await w.store.tryAcquireLease('TOKEN#ba_demo_1', 'x', w.clock.now(), w.clock.now() + 10_000);

    const result = await w.admin({ action: 'refresh', scope: 'ba_demo_1' });

    expect(result).toEqual({ scope: 'ba_demo_1', status: 'busy' });
    expect(shared.sim.stats.tokenRequests).toBe(0);
  });

  it("shows a dead holder's lease as held until 60 s past its end, answers busy until it has watched that lease a lease period (whatever its end says), then refreshes", async () => {
    // Prepare: a holder died with its lease; it ended 59 s ago by this clock
    const w = world();
    await vend(w.vendInstance, urlEvent({ query: 'scope=ba_demo_1' }));
    const endMs = w.clock.now() - 59_000;
    await w.store.tryAcquireLease('TOKEN#ba_demo_1', 'died', endMs - 10_000, endMs);

    // Act
    const early = (await w.admin({ action: 'status' })) as StatusReport;
    const busy = await w.admin({ action: 'refresh', scope: 'ba_demo_1' });
    w.clock.advance(10); // one lease period since refresh first saw it
    const later = (await w.admin({ action: 'status' })) as StatusReport;
    const refreshed = await w.admin({ action: 'refresh', scope: 'ba_demo_1' });

    // Assess
    const lease = (status: StatusReport) =>
      status.tokens.find((t) => t.scope === 'ba_demo_1')?.lease;
    expect(lease(early)).toMatchObject({ held: true, owner: 'died' });
    expect(busy).toEqual({ scope: 'ba_demo_1', status: 'busy' });
    expect(lease(later)).toEqual({ held: false });
    expect(refreshed).toMatchObject({ scope: 'ba_demo_1', status: 'refreshed' });
  });

  it('refuses a scope outside the access policy: it is never sent upstream', async () => {
    const w = world();

    const error = await w.admin({ action: 'refresh', scope: 'ba_other' }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(AdminError);
    expect(error).toMatchObject({ code: 'invalid_request' });
    expect(shared.sim.stats.tokenRequests).toBe(0);
  });

  it("passes the vend path's error code on, e.g. upstream_credentials_rejected", async () => {
    const w = world({
      refresh: async () => {
        throw new UpstreamCredentialsRejectedError(
          'The provider rejected our key and secret (HTTP 401).',
        );
      },
    });

    const error = await w.admin({ action: 'refresh', scope: 'ba_demo_1' }).catch((e: unknown) => e);

    expect(error).toMatchObject({
      name: 'AdminError',
      code: 'upstream_credentials_rejected',
      message: expect.stringMatching(/^upstream_credentials_rejected: /),
    });
  });
});

describe('admin: issue-keys', () => {
  it('hands the event to the key-issuing job and returns its result', async () => {
    const w = world();
    const event = { action: 'issue-keys', businessApplicationIds: ['ba_demo_1'], force: true };

    const result = await w.admin(event);

    expect(result).toEqual({ issued: ['ba_demo_1'], skipped: [], failed: [] });
    expect(w.issued).toEqual([event]);
  });

  it("sends a forced event with the admin's request id as its forceId, so Lambda's retries of the admin reissue nothing twice", async () => {
    const w = world();
    const forced = { action: 'issue-keys', businessApplicationIds: ['ba_demo_1'], force: true };

    await w.admin(forced, { requestId: 'admin-req-1' });
    await w.admin({ ...forced, forceId: 'CHG-1' }, { requestId: 'admin-req-2' });
    await w.admin({ action: 'issue-keys' }, { requestId: 'admin-req-3' });

    expect(w.issued).toEqual([
      { ...forced, forceId: 'admin-req-1' },
      { ...forced, forceId: 'CHG-1' },
      { action: 'issue-keys' },
    ]);
  });

  it('lets a failed job fail the call, with the failed ids and codes', async () => {
    const failure = new KeyIssuingFailedError({
      issued: [],
      skipped: [],
      failed: [{ id: 'ba_demo_1', code: 'feature_not_enabled' }],
    });
    const w = world({ issueKeys: async () => Promise.reject(failure) });

    const error = await w.admin({ action: 'issue-keys' }).catch((e: unknown) => e);

    expect(error).toBe(failure);
    expect((error as Error).message).toContain('ba_demo_1 (feature_not_enabled)');
  });
});

describe('admin: clear-pending-key', () => {
  it('hands the id and the trimmed reason to the issue-keys side, and logs both', async () => {
    const logger = capturingLogger();
    const w = world({ logger });

    const result = await w.admin({
      action: 'clear-pending-key',
      businessApplicationId: 'ba_demo_1',
      reason: '  Provider confirmed nothing issued (ticket 42)  ',
    });

    expect(result).toMatchObject({ business_application_id: 'ba_demo_1', state: 'rejected' });
    expect(w.cleared).toEqual([
      {
        businessApplicationId: 'ba_demo_1',
        reason: 'Provider confirmed nothing issued (ticket 42)',
      },
    ]);
    expect(logger.entries()).toContainEqual(
      expect.objectContaining({
        extra: expect.objectContaining({
          action: 'clear-pending-key',
          businessApplicationId: 'ba_demo_1',
          reason: 'Provider confirmed nothing issued (ticket 42)',
        }),
      }),
    );
  });

  it.each([
    ['no reason', { businessApplicationId: 'ba_demo_1' }, 'reason: required'],
    ['an empty reason', { businessApplicationId: 'ba_demo_1', reason: '' }, 'must not be empty'],
    ['a blank reason', { businessApplicationId: 'ba_demo_1', reason: ' \t ' }, 'must not be empty'],
    [
      'a reason over 500 characters',
      { businessApplicationId: 'ba_demo_1', reason: 'x'.repeat(501) },
      'at most 500 characters',
    ],
    [
      'a reason with a line break',
      { businessApplicationId: 'ba_demo_1', reason: 'ok\n{"level":"INFO"}' },
      'no control characters',
    ],
    [
      'a reason with a bidi override',
      { businessApplicationId: 'ba_demo_1', reason: 'ok \u202e' },
      'no control characters',
    ],
    ['no id', { reason: 'checked' }, 'businessApplicationId: required'],
    ['a bad id', { businessApplicationId: '../x', reason: 'checked' }, 'businessApplicationId'],
    [
      'an extra field',
      { businessApplicationId: 'ba_demo_1', reason: 'checked', force: true },
      'unknown field: force',
    ],
  ])('refuses %s with invalid_request, forwarding nothing', async (_label, fields, problem) => {
    const w = world();

    const error = await w
      .admin({ action: 'clear-pending-key', ...fields })
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(AdminError);
    expect(error).toMatchObject({ code: 'invalid_request' });
    expect((error as Error).message).toContain(problem);
    expect((error as Error).message).not.toContain('../x');
    expect(w.cleared).toEqual([]);
  });
});

describe('admin: bad events', () => {
  it.each([
    ['not an object', 'status'],
    ['an array', [{ action: 'status' }]],
    ['no action', {}],
    ['an unknown action', { action: 'drop-table' }],
    ['invalidate without a scope', { action: 'invalidate' }],
    ['invalidate with all false', { action: 'invalidate', all: false }],
    ['invalidate with scope and all', { action: 'invalidate', all: true, scope: 'ba_demo_1' }],
    ['the short all form, false', { all: false }],
    ['the short all form with a scope', { all: true, scope: 'ba_demo_1' }],
    ['a scope of bad syntax', { action: 'refresh', scope: '../x' }],
    ['refresh with all', { action: 'refresh', all: true }],
    ['status with extra fields', { action: 'status', verbose: true }],
    ['a scope that is not a string', { action: 'refresh', scope: 42 }],
  ])(
    '%s is invalid_request listing the valid events, echoing nothing it sent',
    async (_label, event) => {
      const w = world();

      const error = await w.admin(event).catch((e: unknown) => e);

      expect(error).toBeInstanceOf(AdminError);
      expect(error).toMatchObject({ code: 'invalid_request' });
      const { message, stack } = error as Error;
      for (const action of ['status', 'invalidate', 'refresh', 'issue-keys', 'clear-pending-key']) {
        expect(message).toContain(`"action":"${action}"`);
      }
      expect(message).not.toContain('../x');
      expect(message).not.toContain('drop-table');
      expect(stack).toBe(`AdminError: ${message}`);
      expect(shared.sim.stats.tokenRequests).toBe(0);
    },
  );
});

describe('admin: what counts as a mistyped event', () => {
  it('counts an event refused as invalid_request as InvalidEvents, and nothing else', async () => {
    const counted: string[] = [];
    const w = world({
      count: (metric) => counted.push(metric),
      issueKeys: async () => {
        throw new AdminError('feature_not_enabled', 'ask the provider');
      },
    });

    await w.admin({ action: 'statsu' }).catch(() => undefined);
    await w.admin({ action: 'refresh', scope: 'ba_other' }).catch(() => undefined);
    await w.admin({ action: 'status' });
    await w.admin({ action: 'issue-keys' }).catch(() => undefined);

    // The two mistyped events; not the success, not the job's own failure.
    expect(counted).toEqual(['InvalidEvents', 'InvalidEvents']);
  });
});
