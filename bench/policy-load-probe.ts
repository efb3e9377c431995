/**
 * Run in a fresh `node --expose-gc` by bench/policy-scale.ts: loads and checks
 * the large policy once, as a cold Lambda instance does, and prints the time it
 * took and the heap it used (at its end, before any collection: an upper bound
 * of the peak; and what stays once collected).
 */
import { readFileSync } from 'node:fs';
import { AccessPolicy } from '../functions/core/access-policy.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');
const text = readFileSync(process.argv[2] as string, 'utf8');
gc();
const before = process.memoryUsage().heapUsed;
const started = performance.now();
const policy = AccessPolicy.parse(text, 'bench policy');
const coldMs = performance.now() - started;
const peakBytes = process.memoryUsage().heapUsed - before;
gc();
const retainedBytes = process.memoryUsage().heapUsed - before;
// Warm loads (a policy reloaded by a running instance).
const warm: number[] = [];
for (let i = 0; i < 5; i++) {
  const t = performance.now();
  AccessPolicy.parse(text, 'bench policy');
  warm.push(performance.now() - t);
}
warm.sort((a, b) => a - b);
process.stdout.write(
  JSON.stringify({
    coldMs,
    warmMs: warm[2],
    peakBytes,
    retainedBytes,
    scopes: policy.scopes.size,
    principals: policy.principals.length,
  }),
);
