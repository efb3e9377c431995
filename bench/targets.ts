/** The bench's targets (docs/performance.md), checked against a run's results; any miss fails the run. */

import { maxPolls } from '../functions/core/poll-schedule.js';
import { DEFAULT_EXPECTED_MINT_MS } from '../functions/core/token-service.js';
import type { ColdStartResult } from './cold-start.js';
import { REFRESH_AHEAD_SECONDS } from './names.js';
import type { BenchResults } from './report.js';

/** The vend function's bundle budget: 350 KB (KiB, as the bundle-size test counts it). */
export const VEND_BUNDLE_BUDGET_BYTES = 350 * 1024;
export const TOKEN_LIFETIME_SECONDS = 7200;
/** The token service's default longest wait on a lease: its 10 s lease and 3 s. */
const DEFAULT_MAX_WAIT_MS = 13_000;

export interface TargetCheck {
  readonly target: string;
  readonly measured: string;
  readonly met: boolean;
}

const ms = (value: number | undefined) =>
  value === undefined || Number.isNaN(value) ? 'n/a' : `${value.toFixed(3)} ms`;

export function checkTargets(results: BenchResults): TargetCheck[] {
  const ours = results.variants.ours;
  const maxDayMints = Math.ceil(86_400 / (TOKEN_LIFETIME_SECONDS - REFRESH_AHEAD_SECONDS)) + 1;
  const vend = results.coldStart.find((c): c is ColdStartResult => c.name === 'vend');
  const l1 = ours.latency.l1?.p99;
  const l2 = ours.latency.l2?.p50;
  const bare = ours.latency.bareGetItem?.p50;
  const importRatio = vend ? vend.importMs / vend.sdkOnlyImportMs : Number.NaN;
  const runs = [ours.stampedeOne, ours.stampedeMany, ours.day];
  const memory = results.variants['memory-only'];
  const ratio = (a: number, b: number) => a / b;
  const stampede = (
    label: string,
    run: 'stampedeOne' | 'stampedeMany',
    p50Max: number,
    p99Max: number,
  ): TargetCheck => {
    const p50 = ratio(ours[run].latency.p50, memory[run].latency.p50);
    const p99 = ratio(ours[run].latency.p99, memory[run].latency.p99);
    return {
      target: `cold stampede, ${label}: p50 <= ${p50Max} x and p99 <= ${p99Max} x the per-instance memory cache`,
      measured: `p50 ${ours[run].latency.p50.toFixed(0)} vs ${memory[run].latency.p50.toFixed(0)} ms (${p50.toFixed(2)} x), p99 ${ours[run].latency.p99.toFixed(0)} vs ${memory[run].latency.p99.toFixed(0)} ms (${p99.toFixed(2)} x)`,
      met: p50 <= p50Max && p99 <= p99Max,
    };
  };
  const polls = [ours.stampedeOne.pollsPerWaiter, ours.stampedeMany.pollsPerWaiter];
  const ceiling = maxPolls(
    { expectedMintMs: DEFAULT_EXPECTED_MINT_MS, maxDelayMs: 800 },
    DEFAULT_MAX_WAIT_MS,
  );
  return [
    stampede('1 scope', 'stampedeOne', 1.5, 2),
    stampede('20 scopes', 'stampedeMany', 1.5, 2.5),
    {
      target: `cold stampede: a waiter's DynamoDB reads are bounded (at most ${ceiling} polls)`,
      measured: `${polls.map((p) => (p === undefined ? 'n/a' : p.toFixed(1))).join(' and ')} polls per waiter on average (1 scope, 20 scopes)`,
      met: polls.every((p) => p !== undefined && p <= ceiling),
    },
    {
      target: '24 h: at most 1.1 DynamoDB calls per vend',
      measured: `${ours.day.dynamoCallsPerVend.toFixed(2)} calls per vend`,
      met: ours.day.dynamoCallsPerVend <= 1.1,
    },
    {
      target: '24 h: no in-use scope is served inside its refresh-ahead window',
      measured: `${ours.day.servedInRefreshWindow} vends`,
      met: ours.day.servedInRefreshWindow === 0,
    },
    {
      target: 'cold stampede: exactly 1 mint per scope (1 scope, and 20 scopes)',
      measured: `${ours.stampedeOne.maxMintsPerScope} and ${ours.stampedeMany.maxMintsPerScope} max per scope (${ours.stampedeOne.mints} + ${ours.stampedeMany.mints} in all)`,
      met:
        ours.stampedeOne.mints === 1 &&
        ours.stampedeMany.mints === ours.stampedeMany.scopes &&
        ours.stampedeMany.maxMintsPerScope === 1,
    },
    {
      target: `24 h: at most ceil(86400 / (${TOKEN_LIFETIME_SECONDS} - ${REFRESH_AHEAD_SECONDS})) + 1 = ${maxDayMints} mints per scope`,
      measured: `${ours.day.maxMintsPerScope} max per scope`,
      met: ours.day.maxMintsPerScope <= maxDayMints,
    },
    {
      target: "24 h: after a scope's first mint no caller waits on the provider",
      measured: `${ours.day.waitedAfterFirstMint} vends waited`,
      met: ours.day.waitedAfterFirstMint === 0,
    },
    {
      target: 'L1 hit p99 < 0.2 ms',
      measured: ms(l1),
      met: l1 !== undefined && l1 < 0.2,
    },
    {
      target: 'L2 hit p50 <= 1.3 x bare GetItem p50',
      measured: `${ms(l2)} vs ${ms(bare)} (${l2 && bare ? (l2 / bare).toFixed(2) : 'n/a'} x)`,
      met: l2 !== undefined && bare !== undefined && l2 <= 1.3 * bare,
    },
    {
      target: 'vend bundle <= 350 KB',
      measured: vend ? `${(vend.bytes / 1024).toFixed(1)} KB (${vend.bytes} bytes)` : 'n/a',
      met: vend !== undefined && vend.bytes <= VEND_BUNDLE_BUDGET_BYTES,
    },
    {
      target: 'vend import time <= 1.10 x SDK-only bundle (full SDK credential chain)',
      measured: vend
        ? `${vend.importMs.toFixed(1)} ms vs ${vend.sdkOnlyImportMs.toFixed(1)} ms (${importRatio.toFixed(2)} x; like for like, against ${vend.sdkOnlyLambdaImportMs.toFixed(1)} ms with the Lambda chain: ${(vend.importMs / vend.sdkOnlyLambdaImportMs).toFixed(2)} x)`
        : 'n/a',
      met: importRatio <= 1.1,
    },
    {
      target:
        'vend import time <= 1.25 x SDK-only bundle with the same Lambda credential chain (like for like)',
      measured: vend
        ? `${vend.importMs.toFixed(1)} ms vs ${vend.sdkOnlyLambdaImportMs.toFixed(1)} ms (${(vend.importMs / vend.sdkOnlyLambdaImportMs).toFixed(2)} x)`
        : 'n/a',
      met: vend !== undefined && vend.importMs <= 1.25 * vend.sdkOnlyLambdaImportMs,
    },
    {
      target: `hot vend with a policy of ${results.policyScale.scopes} scopes and ${results.policyScale.grants} grants <= 1.05 x with 2 grants`,
      measured: `${ms(results.policyScale.hotVendLargeMs)} vs ${ms(results.policyScale.hotVendSmallMs)} (${results.policyScale.hotVendRatio.toFixed(2)} x)`,
      met: results.policyScale.hotVendRatio <= 1.05,
    },
    {
      target: 'loading and checking that policy (cold) <= 50 ms and <= 30 MB of heap',
      measured: `${ms(results.policyScale.loadColdMs)}, ${(results.policyScale.loadHeapBytes / 1024 / 1024).toFixed(1)} MB`,
      met:
        results.policyScale.loadColdMs <= 50 &&
        results.policyScale.loadHeapBytes <= 30 * 1024 * 1024,
    },
    {
      target: 'no caller is ever served an expired, short or wrong-scope token',
      measured: `${runs.reduce((n, r) => n + r.badTokens, 0)} bad tokens served`,
      met: runs.every((r) => r.badTokens === 0),
    },
  ];
}
