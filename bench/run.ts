/**
 * `npm run bench`: the token service against three naive baselines, on
 * DynamoDB Local (its own, unless DYNAMODB_ENDPOINT is set) and the provider
 * simulator. Prints the tables, writes bench/results.json and
 * bench/results.svg, and exits 1 when a target is missed.
 */
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { resolve } from 'node:path';
import { coldStart } from './cold-start.js';
import { VARIANTS, type VariantName } from './names.js';
import { policyScale } from './policy-scale.js';
import {
  type BenchResults,
  renderColdStart,
  renderPolicyScale,
  renderSvg,
  renderTable,
  renderTargets,
  type VariantResults,
} from './report.js';
import { checkTargets } from './targets.js';
import {
  coldStampede,
  latency,
  PROVIDER_LATENCY_MS,
  pooled,
  type StampedeRun,
  simulatedDay,
} from './workloads.js';
import { SCOPES, startWorld } from './world.js';

const HERE = import.meta.dirname;
/** Discarded warm-up stampedes of each shape and variant. */
const WARM_UP_ROUNDS = 2;
/** Measured stampedes of each shape and variant, pooled. */
const STAMPEDE_RUNS = 5;
const STAMPEDE_REQUESTS = 500;
const SHAPES = { stampedeOne: SCOPES.slice(0, 1), stampedeMany: SCOPES } as const;

function cpuModel(): string {
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    return /^model name\s*:\s*(.+)$/m.exec(info)?.[1]?.trim() ?? cpus()[0]?.model ?? 'unknown';
  } catch {
    return cpus()[0]?.model ?? 'unknown';
  }
}

const log = (message: string) => process.stderr.write(`${message}\n`);

/** JSON as the repository's formatter writes it: arrays of strings on one line. */
function formatJson(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(
    /\[\n\s+("[^"\n]*"(?:,\n\s+"[^"\n]*")*)\n\s+\]/g,
    (_, items: string) => `[${items.split(/,\n\s+/).join(', ')}]`,
  );
}

async function main(): Promise<number> {
  const started = performance.now();
  const world = await startWorld();
  const variants = {} as Record<VariantName, VariantResults>;
  let scale: Awaited<ReturnType<typeof policyScale>>;
  try {
    // Discarded warm-up of every variant, so the first one measured does not
    // alone pay DynamoDB Local's JVM warming up or Node compiling the shared code.
    for (let round = 0; round < WARM_UP_ROUNDS; round++) {
      for (const name of VARIANTS) {
        for (const scopes of Object.values(SHAPES)) {
          await coldStampede(world, name, scopes, STAMPEDE_REQUESTS);
        }
      }
    }
    log('bench: warm-up done');
    // The variants take turns, run after run, so a slower minute of the
    // machine does not fall on one of them only.
    const runs = Object.fromEntries(
      VARIANTS.map((name) => [
        name,
        { stampedeOne: [] as StampedeRun[], stampedeMany: [] as StampedeRun[] },
      ]),
    ) as Record<VariantName, Record<keyof typeof SHAPES, StampedeRun[]>>;
    for (let run = 0; run < STAMPEDE_RUNS; run++) {
      for (const name of VARIANTS) {
        for (const [shape, scopes] of Object.entries(SHAPES) as Array<
          [keyof typeof SHAPES, readonly string[]]
        >) {
          runs[name][shape].push(await coldStampede(world, name, scopes, STAMPEDE_REQUESTS));
        }
      }
    }
    log('bench: cold stampedes done');
    for (const name of VARIANTS) {
      const t = performance.now();
      const day = await simulatedDay(world, name);
      const lat = await latency(world, name);
      variants[name] = {
        stampedeOne: pooled(runs[name].stampedeOne),
        stampedeMany: pooled(runs[name].stampedeMany),
        day,
        latency: lat,
      };
      log(`bench: ${name} done in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    }
    scale = await policyScale(world);
    log('bench: access policy at scale done');
  } finally {
    await world.close();
  }
  const cold = await coldStart();
  log('bench: cold start done');
  const results: BenchResults = {
    machine: {
      cpus: cpus().length,
      cpuModel: cpuModel(),
      node: process.version,
      platform: `${process.platform} ${process.arch}`,
    },
    startedAt: new Date().toISOString(),
    durationSeconds: Math.round((performance.now() - started) / 1000),
    providerLatencyMs: PROVIDER_LATENCY_MS,
    variants,
    coldStart: cold,
    policyScale: scale,
  };
  const targets = checkTargets(results);
  results.targets = targets;
  await writeFile(resolve(HERE, 'results.json'), `${formatJson(results)}\n`);
  await writeFile(resolve(HERE, 'results.svg'), renderSvg(results));
  const m = results.machine;
  process.stdout.write(
    [
      `Machine: ${m.cpus} CPUs, ${m.cpuModel}, Node ${m.node}, ${m.platform}; run took ${results.durationSeconds} s`,
      '',
      renderTable(results),
      '',
      renderColdStart(results),
      '',
      renderPolicyScale(results),
      '',
      renderTargets(targets),
      '',
      'Wrote bench/results.json and bench/results.svg',
      '',
    ].join('\n'),
  );
  return targets.every((t) => t.met) ? 0 : 1;
}

process.exitCode = await main();
