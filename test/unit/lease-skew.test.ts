import { describe, expect, it } from 'vitest';
import { SkewedClock } from '../support/fleet.js';
import { setup, storeToken } from '../support/token-service-fixture.js';

/**
 * A lease is judged by what this instance has watched, never by comparing its
 * clock with the holder's `lease_until`: clocks minutes apart cost no mint.
 */
describe('lease holders whose clocks lag by minutes', () => {
  /** An instance 2 minutes behind takes the lease and is still minting. */
  async function lagging(t: ReturnType<typeof setup>) {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const behind = t.instance(
      'behind',
      t.credentials,
      async (credentials, scope, deadline) => {
        await held;
        return t.provider.mint(credentials, scope, deadline);
      },
      new SkewedClock(t.clock, -120_000),
    );
    return { behind, release };
  }

  it('regression: a caller with no servable token does not steal the live lease of a holder whose clock lags 2 minutes', async () => {
    // Prepare: the lagging instance holds the lease of a cold scope, mid-mint
    const t = setup();
    const { behind, release } = await lagging(t);
    const holding = behind.getToken('ba_1', 300);
    for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));

    // Act: an instance in step asks while the mint is in flight
    const waiting = t.a.getToken('ba_1', 300);
    for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
    release();
    const [held, waited] = await Promise.all([holding, waiting]);

    // Assess: one mint; the waiter gets the holder's token
    expect(t.provider.state.mints).toBe(1);
    expect(waited.token.accessToken).toBe(held.token.accessToken);
  });

  it('regression: a refresh-ahead does not steal the live lease of a holder whose clock lags 2 minutes', async () => {
    // Prepare: a token inside its refresh-ahead window; the lagging instance refreshes it
    const t = setup();
    await storeToken(t, 'ba_1', { accessToken: 'tok-current', version: 'v1', secondsLeft: 700 });
    const { behind, release } = await lagging(t);
    const holding = behind.getToken('ba_1', 300);
    for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));

    // Act: an instance in step, and the scheduled refresh, while the mint is in flight
    const served = await t.a.getToken('ba_1', 300);
    const refreshed = await t.b.refresh('ba_1', { dueWithinSeconds: 1200 });
    release();
    await holding;

    // Assess
    expect(served.token.accessToken).toBe('tok-current');
    expect(refreshed).toEqual({ status: 'busy' });
    expect(t.provider.state.mints).toBe(1);
  });

  it('a lease left by a holder that died is still taken over, once, after a lease period of watching', async () => {
    // Prepare: a holder whose clock lags 2 minutes took the lease and died
    const t = setup();
    const behind = new SkewedClock(t.clock, -120_000);
    await t.store.tryAcquireLease('TOKEN#ba_1', 'died', behind.now(), behind.now() + 10_000);
    const started = t.clock.now();

    // Act
    const [one, two] = await Promise.all([t.a.getToken('ba_1', 300), t.b.getToken('ba_1', 300)]);

    // Assess
    expect(t.provider.state.mints).toBe(1);
    expect(two.token.accessToken).toBe(one.token.accessToken);
    expect(t.clock.now() - started).toBeGreaterThanOrEqual(10_000);
  });
});
