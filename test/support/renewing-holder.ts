import type { TokenStore } from '../../functions/core/ports.js';
import { afterEverySleep, type TestClock } from './clock.js';

/**
 * A lease that never runs out and never yields a token: a live holder that
 * takes its lease again for another `leaseMs` whenever `clock` sleeps (so,
 * between a waiter's polls). A waiter sees the lease change every time, so it
 * never judges the holder dead and must give up at its wait bound.
 */
export async function keepRenewingLease(
  store: TokenStore,
  pk: string,
  clock: TestClock,
  leaseMs = 10_000,
): Promise<void> {
  const owner = 'renewing-holder';
  const take = async () => {
    const item = await store.get(pk);
    const nowMs = clock.now();
    const holder = item?.leaseUntil === undefined ? undefined : { owner, untilMs: item.leaseUntil };
    const taken = await store.tryAcquireLease(
      pk,
      owner,
      nowMs,
      nowMs + leaseMs,
      undefined,
      holder ? { holder } : {},
    );
    if (!taken) throw new Error(`the renewing holder lost its lease on ${pk}`);
  };
  await take();
  afterEverySleep(clock, take);
}
