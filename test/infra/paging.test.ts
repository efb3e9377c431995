/**
 * Which paging alarms one fault fires: the functions' real code runs with the
 * real Powertools Metrics, its EMF output is captured (test/support/emf.ts),
 * and every paging alarm of the synthesized template is evaluated over those
 * metrics and Lambda's Errors of the invocations that failed. One fault, one
 * page; an operator's refused request, none.
 */

import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { DecryptCommand, EncryptCommand, KMSClient } from '@aws-sdk/client-kms';
import { InvokeCommand, type InvokeCommandOutput, LambdaClient } from '@aws-sdk/client-lambda';
import type { Template } from 'aws-cdk-lib/assertions';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { StaticCredentials } from '../../functions/adapters/credentials.js';
import { LambdaInvoker } from '../../functions/adapters/lambda-invoker.js';
import { metricsRecorder } from '../../functions/adapters/metrics.js';
import { KmsSealer } from '../../functions/adapters/sealers.js';
import { createAdmin } from '../../functions/admin/admin.js';
import { AccessPolicy } from '../../functions/core/access-policy.js';
import { systemClock } from '../../functions/core/clock.js';
import { CredentialsUnavailableError } from '../../functions/core/errors.js';
import { fixedPolicy } from '../../functions/core/policy-source.js';
import { TokenService } from '../../functions/core/token-service.js';
import type { ClearPendingKeyResult } from '../../functions/issue-keys/clear-pending-key.js';
import { KeyIssuingError, type KeyIssuingResult } from '../../functions/issue-keys/errors.js';
import { createKeyIssuingJob } from '../../functions/issue-keys/job.js';
import {
  endRun,
  runScheduledRefresh,
  type ScheduledRefreshReport,
} from '../../functions/refresh/scheduled-refresh.js';
import { TestClock } from '../support/clock.js';
import { emittedMetrics, type MetricIdentity, sameMetric, watchedMetric } from '../support/emf.js';
import { ADMIN, functionId, ISSUE_KEYS, REFRESH, synth } from '../support/infra.js';
import { MemoryTokenStore } from '../support/memory-store.js';
import { CREDS, fakeProvider, setup } from '../support/token-service-fixture.js';

const lambda = mockClient(LambdaClient);
const saved = process.env.POWERTOOLS_METRICS_DISABLED;
beforeAll(() => {
  // vitest sets it; the point here is what the functions really emit.
  process.env.POWERTOOLS_METRICS_DISABLED = 'false';
});
afterAll(() => {
  if (saved === undefined) delete process.env.POWERTOOLS_METRICS_DISABLED;
  else process.env.POWERTOOLS_METRICS_DISABLED = saved;
});
beforeEach(() => lambda.reset());

const quiet = { info: () => {}, warn: () => {}, error: () => {} };
const noop = () => {
  throw new Error('not used');
};

/** One failed invocation: what its function emitted and the error Lambda returned. */
interface Failed {
  readonly emitted: MetricIdentity[];
  readonly error: Error;
}

/** Runs `act` as the handler does (publishing in `finally`), capturing the EMF and the error. */
async function invocation(metrics: Metrics, act: () => Promise<unknown>): Promise<Failed> {
  let error: unknown;
  const emitted = await emittedMetrics(async () => {
    try {
      await act();
    } catch (e) {
      error = e;
    } finally {
      if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
    }
  });
  expect(error).toBeInstanceOf(Error);
  return { emitted, error: error as Error };
}

/** The issue-keys function's job (functions/issue-keys/handler.ts wiring), on stubs. */
function issueKeys(store: Record<string, unknown> = {}) {
  const metrics = new Metrics({ namespace: 'TokenVending', serviceName: 'issue-keys' });
  const job = createKeyIssuingJob(
    {
      store: store as never,
      vault: { locationOf: (id: string) => `keys/${id}`, has: async () => false } as never,
      sealer: {} as never,
      tokens: {} as never,
      logger: quiet,
      count: (metric) => metrics.addMetric(metric, MetricUnit.Count, 1),
    },
    { providerBaseUrl: 'https://provider.invalid', businessApplicationIds: ['ba_1'] },
  );
  return { job, metrics };
}

/** A credentials secret the refresh role cannot read (it lost GetSecretValue, say). */
const UNREADABLE_SECRET = {
  get: async (): Promise<never> => {
    throw new CredentialsUnavailableError('The credentials secret could not be read.');
  },
};

/** A job store DynamoDB does not answer: every id fails (`job_store_unavailable`). */
const storeDown = {
  get: async () => {
    throw new KeyIssuingError('job_store_unavailable', 'DynamoDB GetItem failed (TimeoutError)');
  },
};

/** The admin function (functions/admin/handler.ts wiring), invoking issue-keys through Lambda. */
function admin() {
  const metrics = new Metrics({ namespace: 'TokenVending', serviceName: 'admin' });
  const invoker = new LambdaInvoker(new LambdaClient({}));
  const run = createAdmin({
    store: { list: async () => [], delete: async () => false },
    jobs: { list: async () => [] },
    refresh: noop,
    issueKeys: (event) => invoker.invoke<KeyIssuingResult>(ISSUE_KEYS, event),
    clearPendingKey: (request) =>
      invoker.invoke<ClearPendingKeyResult>(ISSUE_KEYS, {
        action: 'clear-pending-key',
        ...request,
      }),
    policy: fixedPolicy(AccessPolicy.parse('{"scopes":[],"grants":[]}')),
    inUseWindowSeconds: 3600,
    clock: systemClock,
    logger: quiet,
    count: (metric) => metrics.addMetric(metric, MetricUnit.Count, 1),
  });
  return { run, metrics };
}

/** Lambda answers the admin's invoke with the function error issue-keys failed with. */
function issueKeysFailsWith(error: Error): void {
  lambda.on(InvokeCommand).resolves({
    StatusCode: 200,
    FunctionError: 'Unhandled',
    Payload: new TextEncoder().encode(
      JSON.stringify({ errorType: error.name, errorMessage: error.message }),
    ) as unknown as InvokeCommandOutput['Payload'],
  });
}

interface AlarmProps {
  AlarmName: string;
  Threshold: number;
  EvaluationPeriods?: number;
  DatapointsToAlarm?: number;
  MetricName?: string;
  Namespace?: string;
  Dimensions?: Array<{ Name: string; Value: unknown }>;
  Metrics?: Array<{
    Id: string;
    Expression?: string;
    MetricStat?: { Metric: Parameters<typeof watchedMetric>[0] };
  }>;
}

/**
 * The paging alarms (not the release or policy watches) that fire on
 * `periods` consecutive periods (default one), each holding `emitted` and
 * Lambda's `errors` (by function logical id): an alarm that needs more
 * breaching datapoints than that (2 of 3) does not fire.
 */
function firing(
  template: Template,
  emitted: MetricIdentity[],
  errors: Record<string, number>,
  periods = 1,
): string[] {
  const value = (metric: Parameters<typeof watchedMetric>[0]): number | undefined => {
    const identity = watchedMetric(metric);
    if (identity.namespace === 'AWS/Lambda') {
      const ref = (identity.dimensions.FunctionName as unknown as { Ref?: string }).Ref;
      return identity.name === 'Errors' && ref !== undefined ? errors[ref] : undefined;
    }
    const n = emitted.filter((m) => sameMetric(m, identity)).length;
    return n === 0 ? undefined : n;
  };
  const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm'))
    .map((a) => a.Properties as AlarmProps)
    .filter((a) => !/-release-|-policy-watch-/.test(a.AlarmName));
  return alarms
    .filter((alarm) => {
      let seen: number | undefined;
      if (alarm.MetricName !== undefined) {
        seen = value(alarm as never);
      } else {
        const ids = new Map(
          (alarm.Metrics ?? [])
            .filter((m) => m.MetricStat)
            .map((m) => [m.Id, value(m.MetricStat?.Metric as never)]),
        );
        const expression = (alarm.Metrics ?? []).find((m) => m.Expression)?.Expression ?? '';
        // Every paging expression is a sum or difference of FILL(id, 0) terms,
        // each maybe scaled (`5 * FILL(id, 0)`).
        const terms = [...expression.matchAll(/([+-]?)\s*(?:(\d+) \* )?FILL\((\w+), 0\)/g)];
        expect(terms.length, expression).toBeGreaterThan(0);
        seen = terms.reduce(
          (sum, [, sign, scale, id]) =>
            sum + (sign === '-' ? -1 : 1) * Number(scale ?? 1) * (ids.get(id as string) ?? 0),
          0,
        );
      }
      // Missing data is not breaching.
      const breaching = seen !== undefined && seen >= alarm.Threshold;
      return (
        breaching &&
        Math.min(periods, alarm.EvaluationPeriods ?? 1) >= (alarm.DatapointsToAlarm ?? 1)
      );
    })
    .map((a) => a.AlarmName.replace('token-vending-example-', ''))
    .sort();
}

describe('one fault, one page', () => {
  let template: Template;
  beforeAll(() => {
    template = synth().template;
  });

  it('a failed issue-keys run pages once: key-issuing-failures, not issue-keys-errors too', async () => {
    const keys = issueKeys(storeDown);

    // An id the run could not work on: the run fails after every id.
    const run = await invocation(keys.metrics, () =>
      keys.job.handle({ businessApplicationIds: ['ba_1'] }),
    );

    expect(run.error.message).toMatch(/^key_issuing_failed: .*ba_1 \(job_store_unavailable\)/);
    expect(firing(template, run.emitted, { [functionId(template, ISSUE_KEYS)]: 1 })).toEqual([
      'key-issuing-failures',
    ]);
  });

  it('regression: a run that ran out of time before an id pages nobody: it fails, and Lambda retries it', async () => {
    // Ids not attempted counted as key-issuing failures and paged, though the
    // failed run is retried (failed-runs pages if the retries run out too).
    const keys = issueKeys();

    const run = await invocation(keys.metrics, () =>
      keys.job.handle({ businessApplicationIds: ['ba_1'] }, { deadlineMs: 0 }),
    );

    expect(run.error.message).toMatch(/^key_issuing_failed: .*ba_1 \(not_attempted\)/);
    expect(firing(template, run.emitted, { [functionId(template, ISSUE_KEYS)]: 1 })).toEqual([]);
  });

  it('regression: an id another run holds (a manual run meeting a scheduled one) pages nobody: that run works on it', async () => {
    // job_in_progress counted as a key-issuing failure and paged on-call.
    const keys = issueKeys({
      get: async () => ({
        businessApplicationId: 'ba_1',
        state: 'pending',
        attempts: 1,
        leaseOwner: 'the-scheduled-run',
        leaseUntilMs: Date.now() + 60_000,
      }),
      acquire: async () => undefined,
    });

    const run = await invocation(keys.metrics, () =>
      keys.job.handle({ businessApplicationIds: ['ba_1'] }),
    );

    expect(run.error.message).toMatch(/^key_issuing_failed: .*ba_1 \(job_in_progress\)/);
    expect(firing(template, run.emitted, { [functionId(template, ISSUE_KEYS)]: 1 })).toEqual([]);
  });

  it('a failed issue-keys sent through the admin pages once: not admin-errors too', async () => {
    const keys = issueKeys(storeDown);
    const run = await invocation(keys.metrics, () =>
      keys.job.handle({ businessApplicationIds: ['ba_1'] }),
    );
    issueKeysFailsWith(run.error);
    const a = admin();

    const forwarded = await invocation(a.metrics, () =>
      a.run({ action: 'issue-keys', businessApplicationIds: ['ba_1'] }),
    );

    expect(forwarded.error.message).toMatch(/^key_issuing_failed: /);
    expect(
      firing(template, [...run.emitted, ...forwarded.emitted], {
        [functionId(template, ISSUE_KEYS)]: 1,
        [functionId(template, ADMIN)]: 1,
      }),
    ).toEqual(['key-issuing-failures']);
  });

  it('a clear-pending-key refused as no_pending_key (an operator mistake) pages nobody', async () => {
    // No job record: nothing to clear.
    const keys = issueKeys({ get: async () => undefined });
    const refused = await invocation(keys.metrics, () =>
      keys.job.clearPendingKey({
        action: 'clear-pending-key',
        businessApplicationId: 'ba_1',
        reason: 'provider confirmed nothing was issued',
      }),
    );
    issueKeysFailsWith(refused.error);
    const a = admin();

    const forwarded = await invocation(a.metrics, () =>
      a.run({
        action: 'clear-pending-key',
        businessApplicationId: 'ba_1',
        reason: 'provider confirmed nothing was issued',
      }),
    );

    expect(forwarded.error.message).toMatch(/^no_pending_key: /);
    expect(
      firing(template, [...refused.emitted, ...forwarded.emitted], {
        [functionId(template, ISSUE_KEYS)]: 1,
        [functionId(template, ADMIN)]: 1,
      }),
    ).toEqual([]);
  });

  it('an admin event refused as invalid_request pages nobody, as before', async () => {
    const a = admin();

    const refused = await invocation(a.metrics, () => a.run({ action: 'statsu' }));

    expect(refused.error.message).toMatch(/^invalid_request: /);
    expect(firing(template, refused.emitted, { [functionId(template, ADMIN)]: 1 })).toEqual([]);
  });

  it("the admin's own failure still pages admin-errors", async () => {
    lambda.on(InvokeCommand).rejects(new Error('socket hang up'));
    const a = admin();

    const failed = await invocation(a.metrics, () => a.run({ action: 'issue-keys' }));

    expect(failed.error.message).toMatch(/^invoke_failed: /);
    expect(firing(template, failed.emitted, { [functionId(template, ADMIN)]: 1 })).toEqual([
      'admin-errors',
    ]);
  });

  it('an issue-keys invocation that fails outside the ids (a crash) still pages issue-keys-errors', () => {
    expect(firing(template, [], { [functionId(template, ISSUE_KEYS)]: 1 })).toEqual([
      'issue-keys-errors',
    ]);
  });
});

describe('a scheduled refresh that failed', () => {
  let template: Template;
  beforeAll(() => {
    template = synth().template;
  });

  /** The refresh function ending a run (functions/refresh/handler.ts wiring) whose refreshes failed with `codes`. */
  function reportFailing(codes: string[]): ScheduledRefreshReport {
    return {
      refreshed: [],
      fresh: [],
      busy: [],
      unused: [],
      unconfigured: [],
      failed: codes.map((code, i) => ({ scope: `ba_${i}`, code })),
      deferred: [],
    };
  }

  async function endedWith(codes: string[]): Promise<Failed> {
    const metrics = new Metrics({ namespace: 'TokenVending', serviceName: 'refresh' });
    return invocation(metrics, async () =>
      endRun(reportFailing(codes), (metric) => metrics.addMetric(metric, MetricUnit.Count, 1)),
    );
  }

  it('regression: on the provider alone does not fail the invocation, so nothing pages for the run: upstream-errors and credentials-rejected page for the provider', async () => {
    // A provider outage paged twice (refresh-errors and upstream-errors), one
    // provider blip failing one refresh paged refresh-errors on its own, and a
    // failed run's retry failing too paged failed-runs a third time.
    const metrics = new Metrics({ namespace: 'TokenVending', serviceName: 'refresh' });
    let ended: ScheduledRefreshReport | undefined;

    const emitted = await emittedMetrics(() => {
      ended = endRun(
        reportFailing(['upstream_unavailable', 'upstream_credentials_rejected']),
        (metric) => metrics.addMetric(metric, MetricUnit.Count, 1),
      );
      metrics.publishStoredMetrics();
    });

    // Returned, not thrown: no failed invocation, no retry, nothing in failed-runs.
    expect(ended?.failed.map((f) => f.code)).toEqual([
      'upstream_unavailable',
      'upstream_credentials_rejected',
    ]);
    expect(emitted.map((m) => m.name)).toContain('RefreshRunsFailedUpstream');
    expect(firing(template, emitted, {})).toEqual([]);
  });

  it('regression: a scope the provider keeps refusing run after run pages upstream-errors, though it stays under 5 errors a period', async () => {
    // Once a scheduled run that failed on the provider alone stopped failing
    // its invocation, nothing retried it into failed-runs; its one
    // UpstreamErrors a run never reached upstream-errors' 5, so a business
    // application the provider refuses (upstream_error) or a lasting outage
    // of a quiet stack paged nobody until its callers' tokens ran out.
    const metrics = new Metrics({ namespace: 'TokenVending', serviceName: 'refresh' });
    const emitted = await emittedMetrics(() => {
      metrics.addMetric('UpstreamErrors', MetricUnit.Count, 1); // the failed mint (mint-token.ts)
      endRun(reportFailing(['upstream_error']), (metric) =>
        metrics.addMetric(metric, MetricUnit.Count, 1),
      );
      metrics.publishStoredMetrics();
    });

    // One run (a blip): nobody. The next run failing too: upstream-errors, alone.
    expect(firing(template, emitted, {}, 1)).toEqual([]);
    expect(firing(template, emitted, {}, 2)).toEqual(['upstream-errors']);
  });

  it('regression: the credentials secret unreadable by refresh is not the provider: it pages refresh-errors', async () => {
    // The refresh answered upstream_unavailable (the vend API's code for an
    // unreadable secret), so the run counted as failed on the provider alone
    // and refresh-errors left it out; no request reached the provider, so
    // upstream-errors never counts it either: a refresh role that lost
    // GetSecretValue paged nobody.
    const t = setup();
    await t.a.getToken('ba_1', 300);
    const metrics = new Metrics({ namespace: 'TokenVending', serviceName: 'refresh' });

    const run = await invocation(metrics, async () => {
      const report = await runScheduledRefresh(
        {
          tokens: t.instance('refresh', UNREADABLE_SECRET),
          store: t.store,
          clock: t.clock,
          logger: quiet,
        },
        { inUseWindowSeconds: 3600, dueWithinSeconds: 7200, scopes: new Set(['ba_1']) },
      );
      return endRun(report, (metric) => metrics.addMetric(metric, MetricUnit.Count, 1));
    });

    expect(run.error.message).toMatch(/ba_1 \(credentials_unavailable\)/);
    expect(firing(template, run.emitted, { [functionId(template, REFRESH)]: 1 })).toEqual([
      'refresh-errors',
    ]);
  });

  it("regression: the log line of a refresh that could not read the secret names credentials_unavailable, the code refresh-errors' runbook sends the operator to", async () => {
    // The `scheduled refresh failed` line gave only describe(error), whose
    // code is the vend API's upstream_unavailable: the on-call paged by
    // refresh-errors read "the provider" and looked there.
    const t = setup();
    await t.a.getToken('ba_1', 300);
    const lines: Array<Record<string, unknown>> = [];
    const logger = {
      ...quiet,
      warn: (message: unknown, ...fields: unknown[]) => {
        lines.push(Object.assign({ message }, ...(fields as object[])));
      },
    };

    await runScheduledRefresh(
      { tokens: t.instance('refresh', UNREADABLE_SECRET), store: t.store, clock: t.clock, logger },
      { inUseWindowSeconds: 3600, dueWithinSeconds: 7200, scopes: new Set(['ba_1']) },
    );

    expect(lines).toContainEqual(
      expect.objectContaining({
        message: 'scheduled refresh failed',
        scope: 'ba_1',
        code: 'credentials_unavailable',
      }),
    );
  });

  it('on the table, or on the provider and the table, still pages refresh-errors', async () => {
    for (const codes of [['store_unavailable'], ['upstream_unavailable', 'sealer_unavailable']]) {
      const run = await endedWith(codes);

      expect(
        firing(template, run.emitted, { [functionId(template, REFRESH)]: 1 }),
        codes.join(),
      ).toEqual(['refresh-errors']);
    }
  });
});

describe('a change of the cache key', () => {
  const kms = mockClient(KMSClient);
  let template: Template;
  beforeAll(() => {
    template = synth().template;
  });
  beforeEach(() => kms.reset());
  afterAll(() => kms.restore());

  /** KMS as it answers: blobs name their key; Decrypt of another key's blob, or `refuse`. */
  function kmsWith(state: { key: string; refuse?: string }) {
    const kmsError = (name: string) =>
      Object.assign(new Error(name), { name, $fault: 'client', $metadata: {} });
    kms.on(EncryptCommand).callsFake(async (input) => ({
      CiphertextBlob: Buffer.from(`${state.key}|${Buffer.from(input.Plaintext).toString('utf8')}`),
    }));
    kms.on(DecryptCommand).callsFake(async (input) => {
      if (state.refuse !== undefined) throw kmsError(state.refuse);
      const [key, plaintext] = Buffer.from(input.CiphertextBlob).toString('utf8').split('|');
      if (key !== state.key) throw kmsError('IncorrectKeyException');
      return { Plaintext: Buffer.from(plaintext as string) };
    });
  }

  /** Vend's cache core (functions/vend-token/aws-runtime.ts wiring) on one table. */
  function vendInstance(store: MemoryTokenStore, id: string) {
    const metrics = new Metrics({ namespace: 'TokenVending', serviceName: 'vend-token' });
    const tokens = new TokenService({
      store,
      sealer: new KmsSealer(new KMSClient({}), 'alias/cache'),
      credentials: new StaticCredentials(CREDS),
      mint: fakeProvider().mint,
      clock: new TestClock({ frozenAt: 1_800_000_000_500 }),
      random: () => 0.5,
      logger: quiet,
      count: metricsRecorder(metrics).count,
      instanceId: id,
    });
    return { tokens, metrics };
  }

  /** What a second instance (nothing in memory) emits reading the item the first stored. */
  async function secondRead(state: { key: string; refuse?: string }, change: () => void) {
    kmsWith(state);
    const store = new MemoryTokenStore();
    await vendInstance(store, 'a').tokens.getToken('ba_1', 300);
    change();
    const b = vendInstance(store, 'b');
    let tier = '';
    const emitted = await emittedMetrics(async () => {
      tier = (await b.tokens.getToken('ba_1', 300)).outcome.tier;
      b.metrics.publishStoredMetrics();
    });
    return { emitted, tier };
  }

  it('an item sealed under the previous key (the runbook calls it expected) pages nobody', async () => {
    const state = { key: 'old-key' };

    const { emitted, tier } = await secondRead(state, () => {
      state.key = 'new-key';
    });

    expect(tier).toBe('provider');
    expect(emitted.map((m) => m.name)).toContain('OtherKeyItems');
    expect(firing(template, emitted, {})).toEqual([]);
  });

  it('a key that refuses to decrypt (disabled, denied) still pages unseal-failures', async () => {
    const state: { key: string; refuse?: string } = { key: 'key' };

    const { emitted, tier } = await secondRead(state, () => {
      state.refuse = 'AccessDeniedException';
    });

    expect(tier).toBe('provider');
    expect(firing(template, emitted, {})).toEqual(['unseal-failures']);
  });
});
