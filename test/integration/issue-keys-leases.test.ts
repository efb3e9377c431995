/**
 * The run lease on a key job, with the records on DynamoDB Local: what a run
 * does when another one gets there first, or takes the job over.
 */
import { describe, expect, it } from 'vitest';
import { DynamoDbKeyJobStore } from '../../functions/adapters/dynamodb-key-job-store.js';
import type { KeyIssuingResult } from '../../functions/issue-keys/errors.js';
import type { KeyJobStore, UnscopedTokenSource } from '../../functions/issue-keys/ports.js';
import { afterEverySleep } from '../support/clock.js';
import { keyJobRecord, useSecretsManagerKeyJobs } from '../support/key-job-harness.js';
import { lostReplyClient } from '../support/lost-reply-client.js';

const kj = useSecretsManagerKeyJobs('tvm-test');

const ID = 'ba_demo_1';
const LEASE_MS = 60_000;
const keysSent = () => kj.h.sent.filter((r) => r.url.endsWith('/keys'));

/** The harness's store, but the first `get` returns only once `other` has run: a run that reads, then waits. */
function storeLettingAnotherRunFirst(other: () => Promise<unknown>): KeyJobStore {
  const real = kj.h.store;
  let raced = false;
  return new Proxy(real, {
    get(target, property) {
      if (property === 'get') {
        return async (id: string) => {
          const read = await target.get(id);
          if (!raced) {
            raced = true;
            await other();
          }
          return read;
        };
      }
      const value = Reflect.get(target, property);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** The harness's token source, but the first token is handed out only once `other` has run. */
function tokensLettingAnotherRunFirst(other: () => Promise<unknown>): UnscopedTokenSource {
  const real = kj.h.tokens();
  let raced = false;
  return {
    getToken: async (options) => {
      if (!raced) {
        raced = true;
        await other();
      }
      return real.getToken(options);
    },
    invalidate: (scope) => real.invalidate(scope),
  };
}

describe('the lease', () => {
  it('is re-checked once taken: keys another run stored since the read are skipped, one provider call in all', async () => {
    // Prepare: a pending issue (three 503s), so the read alone cannot tell the keys are stored.
    kj.h.sim.injectKeysFault({ kind: 'status', status: 503 }, 3);
    expect((await kj.h.job().run()).failed).toEqual([{ id: ID, code: 'upstream_unavailable' }]);
    const before = keysSent().length;
    let other: Awaited<ReturnType<ReturnType<typeof kj.h.job>['run']>> | undefined;
    const late = kj.h.job({
      store: storeLettingAnotherRunFirst(async () => {
        other = await kj.h.job().run();
      }),
    });

    // Act: the late run reads the pending record; another run stores the keys; then it takes the lease.
    const result = await late.run();

    // Assess
    expect(other?.issued).toEqual([ID]);
    expect(result).toEqual({ issued: [], skipped: [ID], failed: [] });
    expect(keysSent().length - before).toBe(1);
    expect(kj.h.sim.stats.keysIssued).toBe(1);
  });

  it('once lost, the run writes nothing more to the job record', async () => {
    // Prepare: run A gets a 503; while it backs off, its lease runs out and run B takes the job.
    const a = lostReplyClient({ losing: false });
    kj.h.sim.injectKeysFault({ kind: 'status', status: 503 });
    let updatesBeforeTakeover = 0;
    let taken: Awaited<ReturnType<typeof keyJobRecord>> | undefined;
    afterEverySleep(kj.h.clock, async (sleeps) => {
      if (sleeps !== 1) return;
      updatesBeforeTakeover = a.updatesSent();
      kj.h.clock.advance(LEASE_MS / 1000 + 1);
      const now = kj.h.clock.now();
      expect(await kj.h.store.acquire(ID, 'run-b', now, now + LEASE_MS)).toBeDefined();
      taken = await keyJobRecord(kj.h, ID);
    });
    const job = kj.h.job(
      { store: new DynamoDbKeyJobStore(a.client, kj.h.table), random: () => 0 },
      { leaseMs: LEASE_MS },
    );

    // Act
    const result = await job.run();
    a.client.destroy();

    // Assess
    expect(result.failed).toEqual([{ id: ID, code: 'lease_lost' }]);
    // One write tried after the takeover (the next attempt's, refused); no failure record, no release.
    expect(a.updatesSent() - updatesBeforeTakeover).toBe(1);
    expect(await keyJobRecord(kj.h, ID)).toEqual(taken);
    expect(keysSent()).toHaveLength(1);
  });

  it('is not taken for an id the record says is stored: a run that skips it writes nothing', async () => {
    // Prepare
    await kj.h.job().run();
    kj.h.clock.advance(60);
    const stored = await keyJobRecord(kj.h, ID);

    // Act
    const result = await kj.h.job().run();

    // Assess
    expect(result).toEqual({ issued: [], skipped: [ID], failed: [] });
    expect(await keyJobRecord(kj.h, ID)).toEqual(stored);
  });

  it('holds from the moment it is taken: a run arriving before the first request is refused', async () => {
    // Prepare: a pending issue (three 503s): the next run reuses its key, so nothing renews
    // the lease it takes until its first request, after the token fetch.
    kj.h.sim.injectKeysFault({ kind: 'status', status: 503 }, 3);
    await kj.h.job().run();
    let other: KeyIssuingResult | undefined;
    const slow = kj.h.job({
      tokens: tokensLettingAnotherRunFirst(async () => {
        kj.h.clock.advance(1);
        other = await kj.h.job().run();
      }),
    });

    // Act: while the run waits for its token, a second later, another run tries the id
    const result = await slow.run();

    // Assess
    expect(other).toEqual({
      issued: [],
      skipped: [],
      failed: [{ id: ID, code: 'job_in_progress' }],
    });
    expect(result).toEqual({ issued: [ID], skipped: [], failed: [] });
    expect(kj.h.sim.stats.keysIssued).toBe(1);
  });

  it('is renewed by each attempt: a run retrying past the lease it took still holds the job', async () => {
    // Prepare: two 503s; 50 s pass in the first backoff and 20 s more in the second, so
    // another run tries the id 70 s after the lease was taken (10 s after the second attempt).
    kj.h.sim.injectKeysFault({ kind: 'status', status: 503 }, 2);
    let other: KeyIssuingResult | undefined;
    afterEverySleep(kj.h.clock, async (sleeps) => {
      if (sleeps === 1) kj.h.clock.advance(50);
      if (sleeps === 2) {
        kj.h.clock.advance(20);
        other = await kj.h.job().run();
      }
    });

    // Act
    const result = await kj.h.job({ random: () => 0 }, { leaseMs: LEASE_MS }).run();

    // Assess
    expect(other).toEqual({
      issued: [],
      skipped: [],
      failed: [{ id: ID, code: 'job_in_progress' }],
    });
    expect(result).toEqual({ issued: [ID], skipped: [], failed: [] });
    expect(kj.h.sim.stats.keysIssued).toBe(1);
  });
});
