/**
 * A smoke test of the bench's own modules (statistics, targets, outputs) on a
 * made-up result; the bench itself runs only with `npm run bench`.
 */
import { describe, expect, it } from 'vitest';
import type { BenchResults, VariantResults } from '../../bench/report.js';
import {
  renderColdStart,
  renderPolicyScale,
  renderSvg,
  renderTable,
  renderTargets,
} from '../../bench/report.js';
import { percentile, seededRandom, summarize } from '../../bench/stats.js';
import { checkTargets } from '../../bench/targets.js';
import { pooled, type StampedeRun } from '../../bench/workloads.js';

const latency = (p50: number, p99 = p50 * 2) => ({ n: 100, p50, p99 });

function run(mints: number, overrides: Partial<VariantResults['day']> = {}) {
  return {
    vends: 500,
    errors: {},
    mints,
    maxMintsPerScope: mints,
    dynamoCallsPerVend: 0.5,
    latency: latency(2),
    served: { l2: 500 },
    latencyByServed: { l2: latency(2) },
    badTokens: 0,
    scopes: 1,
    requestsPerScope: 500,
    runs: 5,
    waitedAfterFirstMint: 0,
    servedInRefreshWindow: 0,
    pollsPerWaiter: 3,
    instancesStarted: 50,
    ...overrides,
  };
}

function variant(mints: number): VariantResults {
  return {
    stampedeOne: run(mints),
    stampedeMany: { ...run(20 * mints), maxMintsPerScope: mints, scopes: 20 },
    day: run(15 * mints, { maxMintsPerScope: 15 }),
    latency: {
      l1: latency(0.02, 0.05),
      l2: latency(1.1),
      bareGetItem: latency(1),
      duringRefresh: latency(5),
      duringRefreshServed: { l2: 20 },
    },
  };
}

function results(): BenchResults {
  return {
    machine: { cpus: 2, cpuModel: 'test', node: 'v20', platform: 'linux x64' },
    startedAt: '2030-01-01T00:00:00.000Z',
    durationSeconds: 1,
    providerLatencyMs: 100,
    variants: {
      ours: variant(1),
      'no-cache': variant(500),
      'memory-only': variant(50),
      'dynamodb-no-lease': variant(50),
    },
    coldStart: [
      {
        name: 'vend',
        bytes: 349_000,
        sdkClients: ['client-dynamodb'],
        sdkOnlyBytes: 369_000,
        importMs: 50,
        sdkOnlyImportMs: 48,
        sdkOnlyLambdaBytes: 242_000,
        sdkOnlyLambdaImportMs: 42,
      },
    ],
    policyScale: {
      documentBytes: 480_000,
      scopes: 10_000,
      grants: 2_000,
      loadColdMs: 30,
      loadWarmMs: 12,
      loadHeapBytes: 12 * 1024 * 1024,
      retainedHeapBytes: 3 * 1024 * 1024,
      hotVendSmallMs: 0.02,
      hotVendLargeMs: 0.0205,
      hotVendRatio: 1.025,
    },
  };
}

describe('bench statistics', () => {
  it('takes nearest-rank percentiles and a seeded random sequence', () => {
    const samples = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(samples, 50)).toBe(50);
    expect(percentile(samples, 99)).toBe(99);
    expect(summarize([3, 1, 2])).toEqual({ n: 3, p50: 2, p99: 3 });
    expect(Number.isNaN(percentile([], 50))).toBe(true);
    const a = seededRandom(7);
    const b = seededRandom(7);
    expect([a(), a(), a()]).toEqual([b(), b(), b()]);
  });
});

describe('pooled stampedes', () => {
  it("pool the latencies of every run, keep the worst run's mints, and average calls and polls over all vends", () => {
    const stampede = (ms: number[], mints: number, calls: number, polls: number): StampedeRun => ({
      result: { ...run(mints), vends: ms.length, scopes: 1, requestsPerScope: ms.length, runs: 1 },
      records: ms.map((m) => ({ status: 200, label: 'waited', ms: m })),
      dynamoCalls: calls,
      waits: { waits: 2, polls },
    });

    const result = pooled([stampede([10, 20], 1, 4, 2), stampede([30, 40], 2, 2, 4)]);

    expect(result).toMatchObject({ runs: 2, vends: 2, mints: 2, maxMintsPerScope: 2 });
    expect(result.latency).toMatchObject({ n: 4, p50: 20, p99: 40 });
    expect(result.dynamoCallsPerVend).toBe(1.5);
    expect(result.pollsPerWaiter).toBe(1.5);
  });
});

describe('bench targets and outputs', () => {
  it('passes every target on a run that meets them, and names the one a run misses', () => {
    const good = results();
    const bad = results();
    bad.variants.ours = { ...variant(1), stampedeOne: run(2) };

    expect(checkTargets(good).every((t) => t.met)).toBe(true);
    expect(
      checkTargets(bad)
        .filter((t) => !t.met)
        .map((t) => t.target),
    ).toEqual(['cold stampede: exactly 1 mint per scope (1 scope, and 20 scopes)']);
  });

  it.each([
    [
      'a hot vend 6 % slower under the large policy',
      { hotVendRatio: 1.06 },
      'hot vend with a policy',
    ],
    ['a 51 ms cold load', { loadColdMs: 51 }, 'loading and checking that policy'],
    [
      '31 MB of heap to load it',
      { loadHeapBytes: 31 * 1024 * 1024 },
      'loading and checking that policy',
    ],
  ])('misses the access-policy scale targets with %s', (_label, change, missed) => {
    const r = results();
    const bad = { ...r, policyScale: { ...r.policyScale, ...change } };

    expect(
      checkTargets(bad)
        .filter((t) => !t.met)
        .map((t) => t.target),
    ).toEqual([expect.stringContaining(missed)]);
  });

  it('renders the Markdown tables and the SVG chart', () => {
    const r = results();

    const table = renderTable(r);
    const svg = renderSvg(r);

    expect(table.split('\n')[0]).toBe(
      '| workload | metric | token service (L1 + L2 + lease) | no cache (mint per request) | per-instance memory cache | DynamoDB cache, no lease |',
    );
    expect(table).toContain('| 500 (500x) |');
    // Both baselines side by side: the (full SDK chain) and like for like.
    expect(renderColdStart(r)).toContain(
      '| vend | 340.8 | client-dynamodb | 50.0 | 360.4, 48.0 | 1.04 | 236.3, 42.0 | 1.19 |',
    );
    expect(renderTargets(checkTargets(r))).toContain('| yes |');
    expect(renderPolicyScale(r)).toContain('| hot vend, large policy | 0.021 ms (1.02x) |');
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg).toContain('<title id="chart-title">');
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
  });
});
