/**
 * Fault matrix, Secrets Manager (no local emulator: aws-sdk-client-mock with
 * the SDK's real exceptions): the service failing while instances hold the
 * secret, and the secret rotated during traffic across several instances.
 * Each instance reads the secret through the real adapter, with its own cache.
 */
import {
  GetSecretValueCommand,
  InternalServiceError,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it, vi } from 'vitest';
import { SecretsManagerCredentials } from '../../functions/adapters/credentials.js';
import {
  DEMO_PROVIDER_CREDENTIALS,
  type ProviderSimulator,
  startProviderSimulator,
} from '../../local/provider-simulator.js';
import { TestClock } from '../support/clock.js';
import { ask, expectSound, fleetInstance } from '../support/fleet.js';
import { MemoryTokenStore } from '../support/memory-store.js';
import { quietLogger } from '../support/vend-harness.js';

const sm = mockClient(SecretsManagerClient);
const ROTATED = { key: 'rotated_key', secret: 'rotated_secret_value' };
let sim: ProviderSimulator;
let secret: { value: { key: string; secret: string }; version: string; down: boolean };

beforeAll(async () => {
  sim = await startProviderSimulator();
});
afterAll(async () => {
  await sim.close();
  sm.restore();
});
beforeEach(() => {
  sim.reset();
  sm.reset();
  secret = { value: { ...DEMO_PROVIDER_CREDENTIALS }, version: 'v1', down: false };
  sm.on(GetSecretValueCommand).callsFake(() => {
    if (secret.down) {
      throw new InternalServiceError({ message: 'injected outage', $metadata: {} });
    }
    return { SecretString: JSON.stringify(secret.value), VersionId: secret.version };
  });
  // Powertools' secret cache reads Date: move Date itself, nothing else.
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(new Date('2030-01-01T00:00:00Z'));
});
afterEach(() => {
  vi.useRealTimers();
});

const advance = (seconds: number) => vi.setSystemTime(Date.now() + seconds * 1000);

function fleet(size: number, store: MemoryTokenStore, clock: TestClock) {
  return Array.from({ length: size }, () =>
    fleetInstance({
      sim,
      store,
      clock,
      credentials: new SecretsManagerCredentials({
        client: new SecretsManagerClient({ region: 'us-east-1' }),
        secretId: 'provider-credentials',
        logger: quietLogger(),
        now: () => clock.now(),
      }),
    }),
  );
}

it('keeps serving, and refreshing, with the cached secret while Secrets Manager fails; a cold instance serves what it can verify and answers 503 for the rest', async () => {
  // Prepare
  const clock = new TestClock({ virtualSleep: true });
  const store = new MemoryTokenStore();
  const [a, b] = fleet(2, store, clock);
  const first = await ask(a!, 'ba_demo_1');
  await ask(b!, 'ba_demo_1');

  // Act: Secrets Manager fails past the 5-minute cache, then into the refresh-ahead window
  secret.down = true;
  advance(360);
  const cachedSecret = [await ask(a!, 'ba_demo_1'), await ask(b!, 'ba_demo_1')];
  advance(7200 - 800 - 360);
  const refreshed = await ask(a!, 'ba_demo_1');
  const [cold] = fleet(1, store, clock);
  const coldCached = await ask(cold!, 'ba_demo_1');
  const coldUncached = await ask(cold!, 'ba_demo_2');
  secret.down = false;
  advance(31); // the adapter waits 30 s after a failed read
  const recovered = await ask(cold!, 'ba_demo_2');

  // Assess
  for (const answer of [...cachedSecret, refreshed, coldCached, recovered]) {
    expectSound(answer, {
      scope: answer === recovered ? 'ba_demo_2' : 'ba_demo_1',
      nowMs: clock.now(),
    });
    expect(answer.status).toBe(200);
  }
  expect(cachedSecret.map((r) => r.body.access_token)).toEqual([
    first.body.access_token,
    first.body.access_token,
  ]);
  expect(refreshed.body.access_token).not.toBe(first.body.access_token);
  expect(refreshed.body.expires_in as number).toBeGreaterThan(7000);
  expect(coldCached.body.access_token).toBe(refreshed.body.access_token);
  expectSound(coldUncached, { scope: 'ba_demo_2', nowMs: clock.now() });
  expect(coldUncached.status).toBe(503);
  expect(coldUncached.body.code).toBe('upstream_unavailable');
});

it('rotating the secret during traffic across three instances: old-version tokens stop being served within a minute of the first new one, with no error', async () => {
  // Prepare
  const clock = new TestClock({ virtualSleep: true });
  const store = new MemoryTokenStore();
  const instances = fleet(3, store, clock);
  const before = new Set<unknown>();
  const answers: Array<{ at: number; token: unknown; scope: string }> = [];
  let rotatedAt = 0;
  let firstNewAt = Number.POSITIVE_INFINITY;

  // Act: 15 minutes of traffic, a vend per instance every 30 s; rotation after 2 minutes
  for (let step = 0; step < 30; step++) {
    if (step === 4) {
      secret.value = ROTATED;
      secret.version = 'v2';
      sim.setCredentials(ROTATED); // the old pair is rejected from now on
      rotatedAt = Date.now();
    }
    for (const [i, instance] of instances.entries()) {
      const scope = step === 5 && i === 0 ? 'ba_demo_2' : 'ba_demo_1';
      const answer = await ask(instance, scope);
      expectSound(answer, { scope, nowMs: clock.now() });
      expect(answer.status).toBe(200);
      if (scope !== 'ba_demo_1') continue;
      if (rotatedAt === 0) before.add(answer.body.access_token);
      else if (!before.has(answer.body.access_token)) firstNewAt = Math.min(firstNewAt, Date.now());
      answers.push({ at: Date.now(), token: answer.body.access_token, scope });
    }
    advance(30);
  }

  // Assess
  expect(firstNewAt).toBeLessThan(Number.POSITIVE_INFINITY);
  const oldLate = answers.filter((a) => a.at > firstNewAt + 60_000 && before.has(a.token));
  expect(oldLate).toEqual([]);
  expect((await store.get('TOKEN#ba_demo_1'))?.token?.credentialsVersion).toBe('v2');
  expect((await store.get('TOKEN#ba_demo_2'))?.token?.credentialsVersion).toBe('v2');
  const last = answers.slice(-3).map((a) => a.token);
  expect(new Set(last).size).toBe(1);
  expect(sim.stats.tokenRequests).toBeLessThanOrEqual(5);
});

it("a cold instance's concurrent first vends read the secret once, then serve from the cache", async () => {
  // Prepare
  const clock = new TestClock({ virtualSleep: true });
  const [cold] = fleet(1, new MemoryTokenStore(), clock);

  // Act
  const answers = await Promise.all(
    Array.from({ length: 10 }, (_, i) => ask(cold!, i % 2 ? 'ba_demo_1' : 'ba_demo_2')),
  );

  // Assess
  for (const [i, answer] of answers.entries()) {
    expectSound(answer, { scope: i % 2 ? 'ba_demo_1' : 'ba_demo_2', nowMs: clock.now() });
    expect(answer.status).toBe(200);
  }
  expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(1);
});
