import { describe, expect, it } from 'vitest';
import { DynamoDbTokenStore } from '../../functions/adapters/dynamodb-token-store.js';
import {
  runScheduledRefresh,
  type ScheduledRefreshConfig,
  scheduledRefreshDueWithin,
} from '../../functions/refresh/scheduled-refresh.js';
import type { VendRuntime } from '../../functions/vend-token/runtime.js';
import { TestClock } from '../support/clock.js';
import { useSimulatorAndTable } from '../support/simulator-and-table.js';
import { makeInstance, quietLogger, urlEvent, vend } from '../support/vend-harness.js';

const shared = useSimulatorAndTable();

const CONFIG: ScheduledRefreshConfig = {
  inUseWindowSeconds: 3600,
  dueWithinSeconds: 600,
  scopes: new Set(['ba_demo_1', 'ba_demo_2']),
};

function world(
  config: ScheduledRefreshConfig = CONFIG,
  clock = new TestClock({ virtualSleep: true }),
) {
  const store = new DynamoDbTokenStore(shared.client, shared.table);
  const instance = () =>
    makeInstance({ sim: shared.sim, clock, client: shared.client, table: shared.table });
  const scheduler = instance();
  const refresh = () =>
    runScheduledRefresh({ tokens: scheduler.tokens, store, clock, logger: quietLogger() }, config);
  return { clock, store, instance, refresh };
}

const ask = (runtime: VendRuntime, scope: string) =>
  vend(runtime, urlEvent({ query: `scope=${scope}` }));

describe('scheduled refresh', () => {
  it('over a simulated day, keeps an in-use scope from ever making a caller wait on the provider, and leaves an unused one alone after at most one more refresh', async () => {
    // Prepare: three vend instances; ba_demo_2 is vended once, ba_demo_1 every minute
    const w = world();
    let instances = [w.instance(), w.instance(), w.instance()];
    const first = await ask(instances[0]!, 'ba_demo_1');
    await ask(instances[1]!, 'ba_demo_2');
    expect(first.status).toBe(200);
    w.clock.advance(130); // the schedule's ticks do not line up with the first mint
    const tokens = new Set<string>();
    let vendsThatReachedTheProvider = 0;

    // Act: 24 h in five-minute steps: the schedule runs (one run in 13 is
    // missed), then two callers ask 100 s and 250 s later; instances are
    // recycled every 2 hours as Lambda recycles them
    for (let step = 1; step <= (24 * 60) / 5; step++) {
      if (step % 24 === 0) instances = [w.instance(), w.instance(), w.instance()];
      if (step % 13 !== 0) await w.refresh(); // one run in 13 is missed
      for (const [runtime, wait] of [
        [instances[step % 3]!, 100],
        [instances[(step + 1) % 3]!, 150],
      ] as const) {
        w.clock.advance(wait);
        const before = shared.sim.stats.tokenRequests;
        const result = await ask(runtime, 'ba_demo_1');
        if (shared.sim.stats.tokenRequests !== before) vendsThatReachedTheProvider++;
        expect(result.status).toBe(200);
        expect(result.body.expires_in as number).toBeGreaterThan(900);
        tokens.add(result.body.access_token as string);
      }
      w.clock.advance(50);
    }

    // Assess
    const mints1 = shared.sim.stats.tokenRequestsByScope.ba_demo_1 ?? 0;
    const mints2 = shared.sim.stats.tokenRequestsByScope.ba_demo_2 ?? 0;
    // 7200 s tokens refreshed 900 + 600 s before expiry: one mint per 5700 s at most
    expect(mints1).toBeLessThanOrEqual(Math.ceil(86_400 / (7200 - 1500)) + 1);
    expect(mints1).toBeGreaterThanOrEqual(Math.floor(86_400 / 7200));
    // vended once: refreshed once more (it was vended since its token was minted), then left alone
    expect(mints2).toBe(2);
    expect(vendsThatReachedTheProvider).toBe(0);
    expect(tokens.size).toBe(mints1);
  });

  it('keeps a caller that caches its token for most of its life (as the client library does) from ever waiting on the provider', async () => {
    // Prepare: one caller that asks only when its cached token has 300 s left,
    // each time through a new instance (its Lambda was recycled meanwhile)
    const w = world();
    const first = await ask(w.instance(), 'ba_demo_1');
    let cachedUntil = first.body.expires_at as number;
    w.clock.advance(170);
    let vends = 0;
    let vendsThatReachedTheProvider = 0;

    // Act: 24 h, the schedule every 5 minutes
    for (let step = 1; step <= (24 * 60) / 5; step++) {
      await w.refresh();
      w.clock.advance(150);
      if (Math.floor(w.clock.now() / 1000) >= cachedUntil - 300) {
        const before = shared.sim.stats.tokenRequests;
        const result = await ask(w.instance(), 'ba_demo_1');
        vends++;
        if (shared.sim.stats.tokenRequests !== before) vendsThatReachedTheProvider++;
        cachedUntil = result.body.expires_at as number;
      }
      w.clock.advance(150);
    }

    // Assess
    expect(vends).toBeGreaterThanOrEqual(10);
    expect(vendsThatReachedTheProvider).toBe(0);
  });

  it("with the refresh function's own due-within for a 5-minute schedule, mints at most ceil(86400 / (lifetime - refresh_ahead)) + 1 times a day, and no vend waits", async () => {
    // Regression (bench): two intervals of due-within refreshed every 5700 s,
    // 16 mints a day where (7200 - 900) s per token allows 15.
    const w = world({ ...CONFIG, dueWithinSeconds: scheduledRefreshDueWithin(300) });
    const instances = [w.instance(), w.instance()];
    await ask(instances[0]!, 'ba_demo_1');
    w.clock.advance(10); // the first mint falls between two runs
    let waited = 0;

    // Act: 24 h in five-minute steps; each step the schedule runs, then a caller asks
    for (let step = 1; step <= (24 * 60) / 5; step++) {
      await w.refresh();
      w.clock.advance(120);
      const before = shared.sim.stats.tokenRequests;
      const result = await ask(instances[step % 2]!, 'ba_demo_1');
      if (shared.sim.stats.tokenRequests !== before) waited++;
      expect(result.status).toBe(200);
      w.clock.advance(180);
    }

    // Assess
    expect(shared.sim.stats.tokenRequestsByScope.ba_demo_1).toBeLessThanOrEqual(
      Math.ceil(86_400 / (7200 - 900)) + 1,
    );
    expect(waited).toBe(0);
  });

  it('with some runs starting 30 to 59 s late, keeps every caller from waiting on the provider', async () => {
    // Prepare: the refresh function's due-within for a 5-minute schedule; one run in three
    // on time, the others 30 to 59 s late; a caller asks mid-interval and 1 s before each run
    const clock = new TestClock({ virtualSleep: true, frozenAt: Date.now() });
    const w = world({ ...CONFIG, dueWithinSeconds: scheduledRefreshDueWithin(300) }, clock);
    const instances = [w.instance(), w.instance()];
    const start = clock.now();
    const at = (seconds: number) => clock.advance(seconds - (clock.now() - start) / 1000);
    const late = (run: number) => (run % 3 === 0 ? 0 : 30 + ((13 * run) % 30));
    let waited = 0;
    const caller = async (runtime: VendRuntime) => {
      const before = shared.sim.stats.tokenRequests;
      const result = await ask(runtime, 'ba_demo_1');
      if (shared.sim.stats.tokenRequests !== before) waited++;
      expect(result.status).toBe(200);
    };
    at(10);
    await ask(instances[0]!, 'ba_demo_1');

    // Act: 24 h of runs
    for (let run = 1; run <= (24 * 60) / 5; run++) {
      at(run * 300 - 150);
      await caller(instances[run % 2]!);
      at(run * 300 + late(run) - 1);
      await caller(instances[(run + 1) % 2]!);
      at(run * 300 + late(run));
      await w.refresh();
    }

    // Assess
    expect(waited).toBe(0);
  });

  it('never refreshes upstream a cached scope that is no longer in the access policy', async () => {
    // Prepare: both scopes vended and cached; then the policy keeps only ba_demo_1
    const w = world({ ...CONFIG, scopes: new Set(['ba_demo_1']) });
    const caller = w.instance();
    await ask(caller, 'ba_demo_1');
    await ask(caller, 'ba_demo_2');
    w.clock.advance(6000); // both tokens come due before the next run, both in use

    // Act
    const report = await w.refresh();

    // Assess
    expect(report.refreshed).toEqual(['ba_demo_1']);
    expect(report.unconfigured).toEqual(['ba_demo_2']);
    expect(shared.sim.stats.tokenRequestsByScope).toEqual({ ba_demo_1: 2, ba_demo_2: 1 });
  });

  it('counts a scope vended exactly the in-use window ago as in use, and a second later as unused', async () => {
    // Prepare: a vend marks the scope; 10 s later an operator refresh mints a newer token,
    // so only the window keeps the scope in use (it was not vended since that token was minted)
    const clock = new TestClock({ virtualSleep: true, frozenAt: Date.now() });
    const w = world(CONFIG, clock);
    await ask(w.instance(), 'ba_demo_1');
    clock.advance(10);
    await w.instance().tokens.refresh('ba_demo_1');

    // Act
    clock.advance(CONFIG.inUseWindowSeconds - 10);
    const atTheWindow = await w.refresh();
    clock.advance(1);
    const after = await w.refresh();

    // Assess
    expect(atTheWindow.fresh).toEqual(['ba_demo_1']);
    expect(after.unused).toEqual(['ba_demo_1']);
    expect(shared.sim.stats.tokenRequestsByScope.ba_demo_1).toBe(2);
  });
});
