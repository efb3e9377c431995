import { describe, expect, it } from 'vitest';
import {
  effectiveMinTtl,
  isFresh,
  isServable,
  refreshWindow,
} from '../../functions/core/freshness.js';

const NOW = 1_800_000_000;
/** A token issued `age` seconds ago that lives `lifetime` seconds. */
const token = (age: number, lifetime = 7200) => ({
  issuedAt: NOW - age,
  expiresAt: NOW - age + lifetime,
});

describe('isServable: more than min_ttl left', () => {
  it.each([
    [7200 - 301, 300, true],
    [7200 - 300, 300, false],
    [7200 - 299, 300, false],
    [0, 3600, true],
    [7199, 0, true],
    [7200, 0, false],
    [7300, 0, false],
  ])('a 7200 s token aged %i s with min_ttl %i: %s', (age, minTtl, expected) => {
    expect(isServable(token(age), minTtl, NOW)).toBe(expected);
  });

  it('caps min_ttl at the lifetime minus 60 s, so a short-lived token fresh from the provider serves', () => {
    // 600 s tokens (oidc-provider's default) asked for with min_ttl 3600
    expect(effectiveMinTtl(token(0, 600), 3600)).toBe(540);
    expect(isServable(token(0, 600), 3600, NOW)).toBe(true);
    expect(isServable(token(61, 600), 3600, NOW)).toBe(false);
  });

  it('leaves min_ttl alone for 7200 s tokens', () => {
    expect(effectiveMinTtl(token(0), 3600)).toBe(3600);
  });

  it('never serves an expired token, whatever the cap', () => {
    expect(isServable(token(30, 30), 0, NOW)).toBe(false);
    expect(isServable(token(100, 30), 3600, NOW)).toBe(false);
  });
});

describe('isFresh: servable and outside the refresh-ahead window', () => {
  it('is fresh until 900 s are left, then due for a refresh while still servable', () => {
    expect(isFresh(token(7200 - 901), 300, NOW, 900)).toBe(true);
    expect(isFresh(token(7200 - 900), 300, NOW, 900)).toBe(false);
    expect(isServable(token(7200 - 900), 300, NOW)).toBe(true);
  });

  it('is not fresh when short of min_ttl even outside the window', () => {
    expect(isFresh(token(7200 - 1000), 2000, NOW, 900)).toBe(false);
  });

  it('caps the window at half the lifetime, so short-lived tokens are not refreshed on every vend', () => {
    expect(refreshWindow(token(0, 600), 900)).toBe(300);
    expect(isFresh(token(200, 600), 0, NOW, 900)).toBe(true);
    expect(isFresh(token(300, 600), 0, NOW, 900)).toBe(false);
  });
});
