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

function world(config: ScheduledRefreshConfig = CONFIG) {
  const clock = new TestClock({ virtualSleep: true });
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
});
