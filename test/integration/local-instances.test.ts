/**
 * LOCAL_INSTANCES through `npm start`, driven as a user would: 300 concurrent
 * cold vends of one scope, signed as the demo identity, spread over 20
 * instances of the vend handler, with the provider answering in 100 ms
 * (a fault injected through the simulator's control endpoint). Exactly one
 * mint; the other instances waited on the lease. The latency figure is
 * printed, and docs/performance.md sets it beside the bench's stampede.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEMO_IDENTITY } from '../../local/local-identities.js';
import type { StackInfo } from '../../local/stack.js';
import { type NpmStart, startNpmStart } from '../support/npm-start.js';
import { signedGet } from '../support/sigv4.js';

/** One signed vend, timed from signing to the last byte of the answer. */
async function vend(url: string, scope: string): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const response = await signedGet(`${url}/token?min_ttl=300&scope=${scope}`, DEMO_IDENTITY);
  await response.text();
  return { status: response.status, ms: performance.now() - started };
}

const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(p * values.length))] ??
  NaN;

describe('LOCAL_INSTANCES=20 under npm start', () => {
  let stack: NpmStart;
  let info: StackInfo;
  const dir = mkdtempSync(join(tmpdir(), 'tvf-instances-'));

  beforeAll(async () => {
    stack = await startNpmStart(dir, {
      LOCAL_INSTANCES: '20',
      DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'),
      TABLE_NAME: `instances-${Date.now()}`,
    });
    info = JSON.parse(readFileSync(join(dir, '.local/stack.json'), 'utf8'));
  }, 60_000);
  afterAll(() => {
    if (stack?.child.exitCode === null) stack.child.kill('SIGTERM');
  });

  it('300 concurrent cold vends of one scope over 20 instances: exactly one mint, the others waited on the lease', async () => {
    // Prepare: the provider answers in 100 ms
    const injected = await fetch(`${info.providerUrl}/__simulator/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ endpoint: 'token', fault: { kind: 'latency', ms: 100 }, times: 10 }),
    });
    expect(injected.ok).toBe(true);
    expect(stack.output()).toContain('Vend instances:             20');

    // Act
    const results = await Promise.all(
      Array.from({ length: 300 }, () => vend(stack.url, 'ba_demo_1')),
    );

    // Assess
    const stats = (await (await fetch(`${info.providerUrl}/__simulator/stats`)).json()) as {
      tokenRequests: number;
    };
    const outcomes = stack
      .output()
      .split('\n')
      .filter((line) => line.includes('"message":"vend"') && line.includes('"ba_demo_1"'))
      .map((line) => JSON.parse(line).outcome as string);
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(stats.tokenRequests).toBe(1);
    // The minting instance's 15 callers share its mint; other instances' callers waited for it.
    expect(outcomes).toHaveLength(300);
    expect(outcomes.filter((o) => o === 'provider').length).toBeLessThanOrEqual(15);
    expect(outcomes.filter((o) => o === 'waited').length).toBeGreaterThanOrEqual(15);
    const ms = results.map((r) => r.ms);
    const tally: Record<string, number> = {};
    for (const o of outcomes) tally[o] = (tally[o] ?? 0) + 1;
    process.stdout.write(
      `300 cold vends over 20 instances, provider 100 ms: 1 mint, p50 ${percentile(ms, 0.5).toFixed(0)} ms, p99 ${percentile(ms, 0.99).toFixed(0)} ms; ${Object.entries(
        tally,
      )
        .map(([o, n]) => `${o} ${n}`)
        .join(', ')}\n`,
    );
  }, 60_000);
});
