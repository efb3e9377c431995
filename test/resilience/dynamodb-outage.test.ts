/**
 * Fault matrix, DynamoDB: the table becomes unreachable mid-run (a TCP proxy
 * in front of DynamoDB Local goes away) and comes back on the same address.
 * Instances keep serving from L1 or straight from the provider, never a 500,
 * and use the shared cache again as soon as it answers.
 */
import { createHash } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, beforeEach, expect, inject, it } from 'vitest';
import { DynamoDbTokenStore } from '../../functions/adapters/dynamodb-token-store.js';
import { type ProviderSimulator, startProviderSimulator } from '../../local/provider-simulator.js';
import { LOCAL_AWS_CREDENTIALS } from '../../local/table.js';
import { TestClock } from '../support/clock.js';
import { createTestTable, dynamoClient } from '../support/dynamodb.js';
import { ask, expectSound, fleetInstance, startTcpProxy, type TcpProxy } from '../support/fleet.js';
import { urlEvent, vend } from '../support/vend-harness.js';

let sim: ProviderSimulator;
let proxy: TcpProxy;
let client: DynamoDBClient;
let table: string;

beforeAll(async () => {
  sim = await startProviderSimulator();
  proxy = await startTcpProxy(inject('dynamodbEndpoint'));
  // As the functions configure it: a dead endpoint fails fast.
  client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: proxy.endpoint,
    credentials: LOCAL_AWS_CREDENTIALS,
    maxAttempts: 2,
    requestHandler: { requestTimeout: 1000, connectionTimeout: 500 },
  });
  const admin = dynamoClient();
  table = await createTestTable(admin);
  admin.destroy();
});
afterAll(async () => {
  client.destroy();
  await proxy.close();
  await sim.close();
});
beforeEach(() => sim.reset());

it('serves through a DynamoDB outage from L1 or the provider, and goes back to the shared cache after it', async () => {
  // Prepare: three instances; ba_demo_1 cached in the table and in instance 0's L1
  const clock = new TestClock({ virtualSleep: true });
  const store = new DynamoDbTokenStore(client, table);
  const fleet = Array.from({ length: 3 }, () => fleetInstance({ sim, store, clock }));
  const cached = await ask(fleet[0]!, 'ba_demo_1');
  expect(cached.status).toBe(200);

  // Act: the table goes away mid-run
  await proxy.down();
  const during = [
    await ask(fleet[0]!, 'ba_demo_1'), // L1
    await ask(fleet[1]!, 'ba_demo_1'), // degraded: straight from the provider
    await ask(fleet[2]!, 'ba_demo_2'), // a cold scope, degraded too
  ];
  clock.advance(61); // every L1 entry has aged out
  during.push(...(await Promise.all(fleet.map((instance) => ask(instance, 'ba_demo_1')))));
  const mintsDuring = sim.stats.tokenRequests - 1;
  await proxy.up();
  clock.advance(61);
  const after = [];
  for (const instance of fleet) after.push(await ask(instance, 'ba_demo_1'));
  const mintsAfter = sim.stats.tokenRequests - 1 - mintsDuring;

  // Assess
  for (const answer of during) {
    expectSound(answer, {
      scope: answer === during[2] ? 'ba_demo_2' : 'ba_demo_1',
      nowMs: clock.now(),
    });
    expect(answer.status).toBe(200);
  }
  expect(during[0]!.body.access_token).toBe(cached.body.access_token);
  // Without the table each instance mints for itself, at most once per scope per L1
  // lifetime (60 s): instance 1 and 2 at first, then all three a minute later.
  expect(mintsDuring).toBeLessThanOrEqual(2 + fleet.length);
  for (const answer of after) {
    expectSound(answer, { scope: 'ba_demo_1', nowMs: clock.now() });
    expect(answer.body.access_token).toBe(cached.body.access_token);
  }
  expect(mintsAfter).toBe(0);
});

it('during an outage, never tells the caller whose mint failed to come back before the back-off ends', async () => {
  // Regression: degraded mode passed on the provider's Retry-After: 0 while its
  // own 5 s back-off made a sooner retry another 503.
  const clock = new TestClock({ virtualSleep: true });
  const instance = fleetInstance({ sim, store: new DynamoDbTokenStore(client, table), clock });
  await proxy.down();
  try {
    sim.injectTokenFault({ kind: 'status', status: 503, retryAfter: 0 }, 3);

    const failed = await ask(instance, 'ba_demo_2');
    const retried = await ask(instance, 'ba_demo_2');

    expect(failed.status).toBe(503);
    expect(failed.headers['retry-after']).toBe('5');
    expect(retried.status).toBe(503);
    expect(sim.stats.tokenRequests).toBe(3);
  } finally {
    await proxy.up();
  }
});

it('during an outage, a caller that reports each token it receives causes one mint a minute, not one per report', async () => {
  // Regression: degraded mode replaced every reported token at once, and its
  // replacement never counted as one, so a caller looping on provider 401s
  // caused a mint per report (10 in 10 s) where the shared path causes one.
  // Prepare: L1 outlives the minute, so only the report rule decides
  const clock = new TestClock({ virtualSleep: true, frozenAt: 1_800_000_000_500 });
  const instance = fleetInstance({
    sim,
    store: new DynamoDbTokenStore(client, table),
    clock,
    tokenConfig: { l1MaxAgeSeconds: 600 },
  });
  const fingerprintOf = (token: unknown) =>
    createHash('sha256').update(String(token)).digest('hex').slice(0, 16);
  const report = (token: unknown) =>
    vend(instance, urlEvent({ query: `revoked=${fingerprintOf(token)}&scope=ba_demo_2` }));
  await proxy.down();
  try {
    const first = await ask(instance, 'ba_demo_2');
    const mintsBefore = sim.stats.tokenRequests;

    // Act: ten reports in ten seconds, each of the token the caller last received
    const answers = [];
    let held = first.body.access_token;
    for (let i = 0; i < 10; i++) {
      const answer = await report(held);
      answers.push(answer);
      held = answer.body.access_token;
      clock.advance(1);
    }
    const mintsFromReports = sim.stats.tokenRequests - mintsBefore;
    clock.advance(50); // a minute after the replacement was minted
    const unreported = await ask(instance, 'ba_demo_2');
    const later = await report(held);

    // Assess
    expect(first.status).toBe(200);
    for (const answer of [...answers, unreported, later]) expect(answer.status).toBe(200);
    expect(answers[0]!.body.access_token).not.toBe(first.body.access_token);
    expect(mintsFromReports).toBe(1);
    expect(new Set(answers.map((answer) => answer.body.access_token)).size).toBe(1);
    expect(unreported.body.access_token).toBe(held);
    expect(later.body.access_token).not.toBe(held);
    expect(sim.stats.tokenRequests - mintsBefore).toBe(2);
  } finally {
    await proxy.up();
  }
});
