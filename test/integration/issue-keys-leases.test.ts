/**
 * The run lease on a key job, with the records on DynamoDB Local: what a run
 * does when another one gets there first, or takes the job over.
 */
import { describe, expect, it } from 'vitest';
import { DynamoDbKeyJobStore } from '../../functions/adapters/dynamodb-key-job-store.js';
import type { KeyJobStore } from '../../functions/issue-keys/ports.js';
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
});
