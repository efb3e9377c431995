/** The bench's outputs: the table it prints (Markdown, for docs/performance.md), results.json and an SVG chart. */
import type { ColdStartResult } from './cold-start.js';
import { VARIANT_LABELS, VARIANTS, type VariantName } from './names.js';
import type { PolicyScaleResult } from './policy-scale.js';
import type { TargetCheck } from './targets.js';
import type { DayResult, LatencyResult, StampedeResult } from './workloads.js';

export interface VariantResults {
  readonly stampedeOne: StampedeResult;
  readonly stampedeMany: StampedeResult;
  readonly day: DayResult;
  readonly latency: LatencyResult;
}

export interface BenchResults {
  readonly machine: { cpus: number; cpuModel: string; node: string; platform: string };
  readonly startedAt: string;
  readonly durationSeconds: number;
  readonly providerLatencyMs: number;
  readonly variants: Record<VariantName, VariantResults>;
  readonly coldStart: ColdStartResult[];
  readonly policyScale: PolicyScaleResult;
  targets?: TargetCheck[];
}

const fmtMs = (value: number | undefined): string => {
  if (value === undefined || Number.isNaN(value)) return 'n/a';
  if (value < 1) return value.toFixed(3);
  if (value < 10) return value.toFixed(2);
  return value.toFixed(1);
};

const fmtNum = (value: number): string =>
  Number.isInteger(value) ? String(value) : value < 10 ? value.toFixed(2) : value.toFixed(1);

/** `value (ratio x ours)` for a baseline cell; the product's own cell is the value alone. */
function withRatio(
  value: number | undefined,
  ours: number | undefined,
  format: (v: number) => string,
) {
  if (value === undefined || Number.isNaN(value)) return 'n/a';
  if (ours === undefined || Number.isNaN(ours) || ours === 0 || value === ours)
    return format(value);
  const ratio = value / ours;
  return `${format(value)} (${ratio >= 10 ? ratio.toFixed(0) : ratio.toFixed(1)}x)`;
}

interface Row {
  readonly workload: string;
  readonly metric: string;
  readonly value: (r: VariantResults) => number | undefined;
  readonly format: (v: number) => string;
}

const latencyRows = (
  workload: string,
  pick: (r: VariantResults) => { p50: number; p99: number } | undefined,
): Row[] => [
  { workload, metric: 'latency p50 (ms)', value: (r) => pick(r)?.p50, format: fmtMs },
  { workload: '', metric: 'latency p99 (ms)', value: (r) => pick(r)?.p99, format: fmtMs },
];

function rows(results: BenchResults): Row[] {
  const one = results.variants.ours.stampedeOne;
  const many = results.variants.ours.stampedeMany;
  return [
    {
      workload: `cold stampede: ${one.vends} requests, 1 scope, 50 instances (${one.runs} runs)`,
      metric: 'upstream mints',
      value: (r) => r.stampedeOne.mints,
      format: fmtNum,
    },
    {
      workload: '',
      metric: 'DynamoDB calls / vend',
      value: (r) => r.stampedeOne.dynamoCallsPerVend,
      format: fmtNum,
    },
    {
      workload: '',
      metric: 'DynamoDB reads per waiter (polls)',
      value: (r) => r.stampedeOne.pollsPerWaiter,
      format: fmtNum,
    },
    ...latencyRows('', (r) => r.stampedeOne.latency),
    {
      workload: `cold stampede: ${many.vends} requests, ${many.scopes} scopes at once (${many.runs} runs)`,
      metric: 'upstream mints',
      value: (r) => r.stampedeMany.mints,
      format: fmtNum,
    },
    {
      workload: '',
      metric: 'max mints per scope',
      value: (r) => r.stampedeMany.maxMintsPerScope,
      format: fmtNum,
    },
    {
      workload: '',
      metric: 'DynamoDB calls / vend',
      value: (r) => r.stampedeMany.dynamoCallsPerVend,
      format: fmtNum,
    },
    {
      workload: '',
      metric: 'DynamoDB reads per waiter (polls)',
      value: (r) => r.stampedeMany.pollsPerWaiter,
      format: fmtNum,
    },
    ...latencyRows('', (r) => r.stampedeMany.latency),
    {
      workload: `24 h simulated: ${results.variants.ours.day.vends} vends, 20 scopes, 50 recycled instances`,
      metric: 'upstream mints',
      value: (r) => r.day.mints,
      format: fmtNum,
    },
    {
      workload: '',
      metric: 'max mints per scope',
      value: (r) => r.day.maxMintsPerScope,
      format: fmtNum,
    },
    {
      workload: '',
      metric: "vends that waited on the provider after the scope's first mint",
      value: (r) => r.day.waitedAfterFirstMint,
      format: fmtNum,
    },
    {
      workload: '',
      metric: 'vends served a token inside its refresh-ahead window',
      value: (r) => r.day.servedInRefreshWindow,
      format: fmtNum,
    },
    {
      workload: '',
      metric: 'DynamoDB calls / vend',
      value: (r) => r.day.dynamoCallsPerVend,
      format: fmtNum,
    },
    ...latencyRows('', (r) => r.day.latency),
    ...latencyRows('L1 hit (instance memory)', (r) => r.latency.l1),
    ...latencyRows('L2 hit (DynamoDB GetItem + unseal)', (r) => r.latency.l2),
    ...latencyRows('bare GetItem, same table (reference)', (r) => r.latency.bareGetItem),
    ...latencyRows(
      `caller arriving during a refresh (provider ${results.providerLatencyMs} ms)`,
      (r) => r.latency.duringRefresh,
    ),
  ];
}

export function renderTable(results: BenchResults): string {
  const header = `| workload | metric | ${VARIANTS.map((v) => VARIANT_LABELS[v]).join(' | ')} |`;
  const rule = `| --- | --- | ${VARIANTS.map(() => '---:').join(' | ')} |`;
  const body = rows(results).map((row) => {
    const ours = row.value(results.variants.ours);
    const cells = VARIANTS.map((v) =>
      v === 'ours'
        ? ours === undefined || Number.isNaN(ours)
          ? 'n/a'
          : row.format(ours)
        : withRatio(row.value(results.variants[v]), ours, row.format),
    );
    return `| ${row.workload} | ${row.metric} | ${cells.join(' | ')} |`;
  });
  return [header, rule, ...body].join('\n');
}

export function renderColdStart(results: BenchResults): string {
  const lines = [
    '| function | bundle (KB) | SDK clients | import, median of 20 (ms) | SDK-only bundle, full SDK credential chain: KB, import (ms) | ratio | SDK-only bundle, Lambda credential chain: KB, import (ms) | ratio, like for like |',
    '| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const c of results.coldStart) {
    lines.push(
      `| ${c.name} | ${(c.bytes / 1024).toFixed(1)} | ${c.sdkClients.join(', ')} | ${c.importMs.toFixed(1)} | ${(c.sdkOnlyBytes / 1024).toFixed(1)}, ${c.sdkOnlyImportMs.toFixed(1)} | ${(c.importMs / c.sdkOnlyImportMs).toFixed(2)} | ${(c.sdkOnlyLambdaBytes / 1024).toFixed(1)}, ${c.sdkOnlyLambdaImportMs.toFixed(1)} | ${(c.importMs / c.sdkOnlyLambdaImportMs).toFixed(2)} |`,
    );
  }
  return lines.join('\n');
}

/** The access policy at a partner's scale, beside a 2-grant policy. */
export function renderPolicyScale(results: BenchResults): string {
  const p = results.policyScale;
  const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  return [
    `| access policy of ${p.scopes} scopes and ${p.grants} grants (${(p.documentBytes / 1024).toFixed(0)} KB) | measured |`,
    '| --- | ---: |',
    `| load and check, cold (a fresh process) | ${fmtMs(p.loadColdMs)} ms |`,
    `| load and check again (a reload) | ${fmtMs(p.loadWarmMs)} ms |`,
    `| heap grown by the load (before collection) / kept | ${mb(p.loadHeapBytes)} / ${mb(p.retainedHeapBytes)} |`,
    `| hot vend (L1 hit, whole vend path), 2-grant policy | ${fmtMs(p.hotVendSmallMs)} ms |`,
    `| hot vend, large policy | ${fmtMs(p.hotVendLargeMs)} ms (${p.hotVendRatio.toFixed(2)}x) |`,
  ].join('\n');
}

export function renderTargets(targets: readonly TargetCheck[]): string {
  return [
    '| target | measured | met |',
    '| --- | --- | --- |',
    ...targets.map((t) => `| ${t.target} | ${t.measured} | ${t.met ? 'yes' : '**NO**'} |`),
  ].join('\n');
}

// --- SVG -------------------------------------------------------------------

const COLORS: Record<VariantName, string> = {
  ours: '#1b7f3b',
  'no-cache': '#c0392b',
  'memory-only': '#e67e22',
  'dynamodb-no-lease': '#2c6fbb',
};

const xml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

interface Group {
  readonly label: string;
  readonly values: Record<VariantName, number | undefined>;
}

/** One panel of grouped bars on a log10 axis (values from 0.01 up); values are written on the bars. */
function panel(title: string, unit: string, groups: readonly Group[], y: number): string {
  const width = 960;
  const left = 70;
  const plotHeight = 220;
  const top = y + 40;
  const all = groups
    .flatMap((g) => Object.values(g.values))
    .filter((v): v is number => !!v && v > 0);
  const minExp = Math.floor(Math.log10(Math.min(...all)));
  const maxExp = Math.ceil(Math.log10(Math.max(...all)));
  const span = Math.max(1, maxExp - minExp);
  const yOf = (v: number) => top + plotHeight - ((Math.log10(v) - minExp) / span) * plotHeight;
  const parts: string[] = [
    `<text x="${left}" y="${y + 20}" font-size="16" font-weight="bold">${xml(title)}</text>`,
  ];
  for (let e = minExp; e <= maxExp; e++) {
    const ty = yOf(10 ** e);
    parts.push(
      `<line x1="${left}" x2="${width - 10}" y1="${ty}" y2="${ty}" stroke="#ddd"/>`,
      `<text x="${left - 6}" y="${ty + 4}" font-size="11" text-anchor="end">${10 ** e >= 1 ? 10 ** e : (10 ** e).toFixed(-e)}</text>`,
    );
  }
  parts.push(
    `<text x="16" y="${top + plotHeight / 2}" font-size="11" transform="rotate(-90 16 ${top + plotHeight / 2})" text-anchor="middle">${xml(unit)} (log scale)</text>`,
  );
  const groupWidth = (width - left - 20) / groups.length;
  const barWidth = Math.min(34, (groupWidth - 20) / VARIANTS.length);
  groups.forEach((group, gi) => {
    const gx = left + gi * groupWidth + (groupWidth - barWidth * VARIANTS.length) / 2;
    VARIANTS.forEach((variant, vi) => {
      const value = group.values[variant];
      const x = gx + vi * barWidth;
      if (value === undefined || !(value > 0)) {
        parts.push(
          `<text x="${x + barWidth / 2}" y="${top + plotHeight - 4}" font-size="9" text-anchor="middle" fill="#888">n/a</text>`,
        );
        return;
      }
      const by = yOf(Math.max(value, 10 ** minExp));
      parts.push(
        `<rect x="${x + 1}" y="${by}" width="${barWidth - 2}" height="${top + plotHeight - by}" fill="${COLORS[variant]}"><title>${xml(`${VARIANT_LABELS[variant]}: ${fmtNum(value)} ${unit}`)}</title></rect>`,
        `<text x="${x + barWidth / 2}" y="${by - 3}" font-size="9" text-anchor="middle">${xml(value < 1 ? value.toFixed(2) : fmtNum(Number(value.toPrecision(3))))}</text>`,
      );
    });
    parts.push(
      `<text x="${left + gi * groupWidth + groupWidth / 2}" y="${top + plotHeight + 16}" font-size="11" text-anchor="middle">${xml(group.label)}</text>`,
    );
  });
  return parts.join('\n');
}

export function renderSvg(results: BenchResults): string {
  const pick = (f: (r: VariantResults) => number | undefined): Group['values'] =>
    Object.fromEntries(VARIANTS.map((v) => [v, f(results.variants[v])])) as Group['values'];
  const mints: Group[] = [
    { label: 'stampede, 1 scope', values: pick((r) => r.stampedeOne.mints) },
    { label: 'stampede, 20 scopes', values: pick((r) => r.stampedeMany.mints) },
    { label: '24 h, 20 scopes', values: pick((r) => r.day.mints) },
  ];
  const latency: Group[] = [
    { label: 'stampede p50', values: pick((r) => r.stampedeOne.latency.p50) },
    { label: '24 h p50', values: pick((r) => r.day.latency.p50) },
    { label: '24 h p99', values: pick((r) => r.day.latency.p99) },
    { label: 'L1 hit p50', values: pick((r) => r.latency.l1?.p50) },
    { label: 'L2 hit p50', values: pick((r) => r.latency.l2?.p50) },
    { label: 'during refresh p50', values: pick((r) => r.latency.duringRefresh.p50) },
  ];
  const legend = VARIANTS.map(
    (v, i) =>
      `<rect x="${70 + i * 225}" y="620" width="12" height="12" fill="${COLORS[v]}"/><text x="${88 + i * 225}" y="630" font-size="12">${xml(VARIANT_LABELS[v])}</text>`,
  ).join('\n');
  return [
    '<svg xmlns="http://www.w3.org/2000/svg" width="960" height="650" viewBox="0 0 960 650" font-family="sans-serif" role="img" aria-labelledby="chart-title">',
    '<title id="chart-title">Upstream mints and vend latency: the token service against three naive baselines</title>',
    '<rect width="960" height="650" fill="white"/>',
    panel('Upstream mints (fewer is better)', 'mints', mints, 0),
    panel('Vend latency (lower is better)', 'ms', latency, 300),
    legend,
    '</svg>',
    '',
  ].join('\n');
}
