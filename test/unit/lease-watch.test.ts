import { describe, expect, it } from 'vitest';
import { LeaseWatch } from '../../functions/core/lease-watch.js';
import { NO_REVISION, type StoredItem } from '../../functions/core/ports.js';

const LEASE_MS = 10_000;
const T0 = 1_800_000_000_000;
const UNTIL = T0 + LEASE_MS;

/** An item whose lease `owner` holds until `untilMs` (the holder's clock). */
const held = (owner: string, untilMs = UNTIL): StoredItem => ({
  pk: 'TOKEN#ba_1',
  revision: NO_REVISION,
  leaseOwner: owner,
  leaseUntil: untilMs,
});

describe('the lease watch', () => {
  it('calls a lease stale once it has seen it unchanged for exactly one lease period, not before', () => {
    const watch = new LeaseWatch(held('a'), T0, LEASE_MS);

    expect(watch.observe(held('a'), T0 + LEASE_MS - 1)).toEqual({ lease: 'held' });
    expect(watch.observe(held('a'), T0 + LEASE_MS)).toEqual({
      lease: 'stale',
      holder: { owner: 'a', untilMs: UNTIL },
    });
  });

  it('watches anew when another owner holds a lease with the same lease_until', () => {
    // Prepare: a holds the lease; b takes it over, and its lease_until happens to be a's
    const watch = new LeaseWatch(held('a'), T0, LEASE_MS);

    // Act
    const taken = watch.observe(held('b'), T0 + LEASE_MS);
    const justBefore = watch.observe(held('b'), T0 + 2 * LEASE_MS - 1);
    const after = watch.observe(held('b'), T0 + 2 * LEASE_MS);

    // Assess: b's lease is watched for a whole lease period of its own before it is stale
    expect(taken).toEqual({ lease: 'held' });
    expect(justBefore).toEqual({ lease: 'held' });
    expect(after).toEqual({ lease: 'stale', holder: { owner: 'b', untilMs: UNTIL } });
  });

  it('watches anew when the same owner renews its lease', () => {
    const watch = new LeaseWatch(held('a'), T0, LEASE_MS);

    expect(watch.observe(held('a', UNTIL + 5000), T0 + LEASE_MS)).toEqual({ lease: 'held' });
    expect(watch.observe({ pk: 'TOKEN#ba_1', revision: NO_REVISION }, T0 + LEASE_MS + 1)).toEqual({
      lease: 'free',
    });
  });
});
