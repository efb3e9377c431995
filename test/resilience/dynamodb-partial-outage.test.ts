/**
 * Fault matrix, DynamoDB partly down: a fault-injecting HTTP proxy in front of
 * DynamoDB Local answers reads but fails or throttles writes (the lease and
 * the token store are conditional UpdateItems). A token the table still gives
 * is served; callers are never told the provider is unavailable because the
 * table refused a write.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, beforeEach, expect, inject, it } from 'vitest';
import { boundedCalls } from '../../functions/adapters/aws-client-options.js';
import { DynamoDbTokenStore } from '../../functions/adapters/dynamodb-token-store.js';
import { fixedPolicy } from '../../functions/core/policy-source.js';
import type { CoreMetric } from '../../functions/core/token-service.js';
import { createVendRuntime, type VendRuntime } from '../../functions/vend-token/runtime.js';
import { type ProviderSimulator, startProviderSimulator } from '../../local/provider-simulator.js';
import { LOCAL_AWS_CREDENTIALS } from '../../local/table.js';
import { TestClock } from '../support/clock.js';
import { createTestTable, dynamoClient } from '../support/dynamodb.js';
import {
  type DynamoFaultProxy,
  type FaultRule,
  startDynamoFaultProxy,
} from '../support/dynamodb-fault-proxy.js';
import { ask, expectSound, PROVIDER_TIMEOUT_MS } from '../support/fleet.js';
import {
  demoCredentials,
  quietLogger,
  SHARED_SEALER,
  TEST_POLICY,
} from '../support/vend-harness.js';

let sim: ProviderSimulator;
let proxy: DynamoFaultProxy;
let client: DynamoDBClient;
let table: string;

beforeAll(async () => {
  sim = await startProviderSimulator();
  proxy = await startDynamoFaultProxy(inject('dynamodbEndpoint'));
  // As the functions configure it (aws-runtime.ts), with a 150 ms attempt
  // instead of 1 s so a hung call costs little real time.
  client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: proxy.endpoint,
    credentials: LOCAL_AWS_CREDENTIALS,
    ...boundedCalls({ requestTimeoutMs: 150, maxAttempts: 2 }),
  });
});
afterAll(async () => {
  client.destroy();
  await proxy.close();
  await sim.close();
});
beforeEach(async () => {
  sim.reset();
  proxy.set(undefined);
  proxy.reset();
  const admin = dynamoClient();
  table = await createTestTable(admin);
  admin.destroy();
});

/** Reads answered, every write (UpdateItem) failing with `fault`. */
const writesFail =
  (fault: 'status500' | 'hang' | 'throttle'): FaultRule =>
  (operation) =>
    operation === 'UpdateItem' ? { kind: fault } : { kind: 'pass' };

function instance(clock: TestClock, counted: CoreMetric[] = []): VendRuntime {
  return createVendRuntime({
    store: new DynamoDbTokenStore(client, table),
    sealer: SHARED_SEALER,
    credentials: demoCredentials(),
    provider: {
      baseUrl: sim.url,
      unscopedScopeMode: 'omit',
      timeoutMs: PROVIDER_TIMEOUT_MS,
      backoffBaseMs: 5,
    },
    policy: fixedPolicy(TEST_POLICY),
    logger: quietLogger(),
    clock,
    count: (metric) => counted.push(metric),
  });
}

for (const fault of ['status500', 'hang'] as const) {
  it(`a lease write that fails (${fault}) in the refresh-ahead window, with the provider down, serves the current token, not 503`, async () => {
    // Prepare: the token cached; its instance's L1 entry aged out; the token
    // inside the refresh-ahead window with well over min_ttl left
    const clock = new TestClock({ virtualSleep: true });
    const warm = instance(clock);
    const cached = await ask(warm, 'ba_demo_1');
    clock.advance(7200 - 900 + 5);
    proxy.set(writesFail(fault));
    sim.injectTokenFault({ kind: 'status', status: 503 }, 100);

    // Act
    const answers = [await ask(warm, 'ba_demo_1'), await ask(warm, 'ba_demo_1')];

    // Assess: degraded, but the current token, as a failed refresh under the lease serves it
    for (const answer of answers) {
      expectSound(answer, { scope: 'ba_demo_1', nowMs: clock.now() });
      expect(answer.status).toBe(200);
      expect(answer.body.access_token).toBe(cached.body.access_token);
    }
  });
}

it("regression: a token the table gave that falls below the caller's min_ttl while the lease write fails is not served degraded", async () => {
  // Prepare: the token cached, 700 s left (inside the refresh-ahead window),
  // its instance's L1 entry aged out; the provider down; the lease write
  // failing only after 2 s an attempt, as a bounded call that hangs does
  const clock = new TestClock({ virtualSleep: true });
  const warm = instance(clock);
  const cached = await ask(warm, 'ba_demo_1');
  clock.advance(7200 - 700);
  sim.injectTokenFault({ kind: 'status', status: 503 }, 100);
  proxy.set((operation) => {
    if (operation !== 'UpdateItem') return { kind: 'pass' };
    clock.advance(2);
    return { kind: 'status500' };
  });

  // Act: a caller asking for 699 s, which the token had when it was read
  const answer = await ask(warm, 'ba_demo_1', 699);

  // Assess: 696 s left after two attempts is not enough; the provider is down, so 503
  expectSound(answer, { scope: 'ba_demo_1', nowMs: clock.now(), minTtl: 699 });
  expect(answer.body.access_token).not.toBe(cached.body.access_token);
  expect(answer.status).toBe(503);
});

for (const fault of ['status500', 'hang'] as const) {
  it(`a cold instance whose first write fails (${fault}) serves the token the table still gives, minting nothing`, async () => {
    // Prepare: the token cached in the table by another instance
    const clock = new TestClock({ virtualSleep: true });
    const cached = await ask(instance(clock), 'ba_demo_1');
    const mintsBefore = sim.stats.tokenRequests;
    proxy.set(writesFail(fault));

    // Act: a new instance, with the provider up, then one with the provider down
    const served = await ask(instance(clock), 'ba_demo_1');
    sim.injectTokenFault({ kind: 'status', status: 503 }, 100);
    const providerDown = await ask(instance(clock), 'ba_demo_1');

    // Assess
    for (const answer of [served, providerDown]) {
      expectSound(answer, { scope: 'ba_demo_1', nowMs: clock.now() });
      expect(answer.status).toBe(200);
      expect(answer.body.access_token).toBe(cached.body.access_token);
    }
    expect(sim.stats.tokenRequests).toBe(mintsBefore);
  });
}

it('every write throttled and no lease held anywhere: the waiter is served degraded within the Lambda timeout, not 503', async () => {
  // Regression: a throttled lease attempt counted as "another caller has it",
  // so with every write throttled and nobody holding the lease, callers
  // polled an item nobody would ever fill and got 503 upstream_unavailable
  // (the provider was fine) after 13 s, for as long as the throttling lasted.
  const clock = new TestClock({ virtualSleep: true });
  const counted: CoreMetric[] = [];
  const cold = instance(clock, counted);
  proxy.set(writesFail('throttle'));
  const startedMs = clock.now();

  const answer = await ask(cold, 'ba_demo_1');

  expectSound(answer, { scope: 'ba_demo_1', nowMs: clock.now() });
  expect(answer.status).toBe(200);
  expect(clock.now() - startedMs).toBeLessThan(30_000);
  expect(sim.stats.tokenRequests).toBe(1);
  expect(counted).toContain('Degraded');
}, 30_000); // the SDK's real back-off between throttled attempts

it('the table lost between the lease and the store: one degraded vend counts Degraded once', async () => {
  // Prepare: a cached token that has expired; the next lease write is answered, every later write fails
  const clock = new TestClock({ virtualSleep: true });
  const counted: CoreMetric[] = [];
  const warm = instance(clock, counted);
  await ask(warm, 'ba_demo_1');
  clock.advance(7200);
  let writes = 0;
  proxy.set((operation) =>
    operation === 'UpdateItem' && ++writes > 1 ? { kind: 'status500' } : { kind: 'pass' },
  );
  counted.length = 0;

  // Act
  const answer = await ask(warm, 'ba_demo_1');

  // Assess: served from the provider, degraded, counted as one degraded vend
  expectSound(answer, { scope: 'ba_demo_1', nowMs: clock.now() });
  expect(answer.status).toBe(200);
  expect(counted.filter((metric) => metric === 'Degraded')).toHaveLength(1);
});
