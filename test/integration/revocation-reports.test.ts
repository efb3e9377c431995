import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TestClock } from '../support/clock.js';
import { useSimulatorAndTable } from '../support/simulator-and-table.js';
import { makeInstance, urlEvent, vend } from '../support/vend-harness.js';

const shared = useSimulatorAndTable();
const fingerprintOf = (token: unknown) =>
  createHash('sha256').update(String(token)).digest('hex').slice(0, 16);

describe('revocation reports across instances (DynamoDB Local)', () => {
  it('a token minted to replace a reported one is not replaced again by reports through other instances for a minute', async () => {
    // Prepare
    const clock = new TestClock({ virtualSleep: true, frozenAt: 1_800_000_000_500 });
    const instance = () => makeInstance({ ...shared, clock });
    const [a, b, c] = [instance(), instance(), instance()];
    const first = await vend(a, urlEvent({ query: 'scope=ba_demo_1' }));
    const report = (to: typeof a, token: unknown) =>
      vend(to, urlEvent({ query: `revoked=${fingerprintOf(token)}&scope=ba_demo_1` }));

    // Act
    const replaced = await report(b, first.body.access_token);
    const again = await report(c, replaced.body.access_token);
    clock.advance(60);
    const later = await report(c, replaced.body.access_token);

    // Assess
    expect(replaced.body.access_token).not.toBe(first.body.access_token);
    expect(again.body.access_token).toBe(replaced.body.access_token);
    expect(later.body.access_token).not.toBe(replaced.body.access_token);
    expect(shared.sim.stats.tokenRequests).toBe(3);
  });

  it("a report reaching an instance that first meets the replacement then waits a minute from that report, whatever the replacement's issued_at", async () => {
    // Prepare: the replacement is ten minutes old by every clock
    const clock = new TestClock({ virtualSleep: true, frozenAt: 1_800_000_000_500 });
    const instance = () => makeInstance({ ...shared, clock });
    const first = await vend(instance(), urlEvent({ query: 'scope=ba_demo_2' }));
    const report = (to: ReturnType<typeof instance>, token: unknown) =>
      vend(to, urlEvent({ query: `revoked=${fingerprintOf(token)}&scope=ba_demo_2` }));
    const replaced = await report(instance(), first.body.access_token);
    clock.advance(600);
    const fresh = instance();
    const mintsBefore = shared.sim.stats.tokenRequests;

    // Act
    const atFirstSight = await report(fresh, replaced.body.access_token);
    clock.advance(60);
    const aMinuteOn = await report(fresh, replaced.body.access_token);

    // Assess
    expect(atFirstSight.status).toBe(200);
    expect(atFirstSight.body.access_token).toBe(replaced.body.access_token);
    expect(aMinuteOn.body.access_token).not.toBe(replaced.body.access_token);
    expect(shared.sim.stats.tokenRequests - mintsBefore).toBe(1);
  });
});
