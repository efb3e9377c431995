import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DynamoDbTokenStore } from '../../functions/adapters/dynamodb-token-store.js';
import { AesGcmSealer } from '../../functions/adapters/sealers.js';
import { type ProviderSimulator, startProviderSimulator } from '../../local/provider-simulator.js';
import { TestClock } from '../support/clock.js';
import { createTestTable, dynamoClient } from '../support/dynamodb.js';
import { keepRenewingLease } from '../support/renewing-holder.js';
import { demoCredentials, makeInstance, urlEvent, vend } from '../support/vend-harness.js';

let sim: ProviderSimulator;
let client: DynamoDBClient;

beforeAll(async () => {
  sim = await startProviderSimulator();
  client = dynamoClient();
});
afterAll(async () => {
  await sim.close();
  client.destroy();
});

let table: string;
beforeEach(async () => {
  sim.reset();
  table = await createTestTable(client);
});

const scoped = urlEvent({ query: 'scope=ba_demo_1' });

describe('token cache across instances (DynamoDB Local)', () => {
  it('mints exactly once for 500 concurrent requests across 50 cold instances', async () => {
    // Prepare
    const clock = new TestClock();
    const instances = Array.from({ length: 50 }, () => makeInstance({ sim, clock, client, table }));
    sim.injectTokenFault({ kind: 'latency', ms: 150 });

    // Act
    const results = await Promise.all(
      Array.from({ length: 500 }, (_, i) => vend(instances[i % 50]!, scoped)),
    );

    // Assess
    expect(results.map((r) => r.status)).toEqual(Array(500).fill(200));
    expect(sim.stats.tokenRequests).toBe(1);
    expect(new Set(results.map((r) => r.body.access_token)).size).toBe(1);
  });

  it('mints exactly once when 500 cold instances arrive spread over 400 ms', async () => {
    // Regression: a caller that read "no token" before another stored one must not mint again.
    const clock = new TestClock();
    sim.injectTokenFault({ kind: 'latency', ms: 50 });

    const results = await Promise.all(
      Array.from({ length: 500 }, async (_, i) => {
        await new Promise((resolve) => setTimeout(resolve, (i * 397) % 400));
        return vend(makeInstance({ sim, clock, client, table }), scoped);
      }),
    );

    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(sim.stats.tokenRequests).toBe(1);
  });

  it("keeps serving the current token while exactly one caller refreshes ahead; not even its own instance's other callers wait on the provider", async () => {
    // Prepare: a token cached, then time moved into the 900 s refresh-ahead window
    const clock = new TestClock();
    const first = await vend(makeInstance({ sim, clock, client, table }), scoped);
    clock.advance(7200 - 800);
    sim.injectTokenFault({ kind: 'latency', ms: 300 });
    const instances = Array.from({ length: 10 }, () => makeInstance({ sim, clock, client, table }));

    // Act
    const during = await Promise.all(
      Array.from({ length: 50 }, (_, i) => vend(instances[i % 10]!, scoped)),
    );
    const after = await vend(makeInstance({ sim, clock, client, table }), scoped);

    // Assess
    expect(sim.stats.tokenRequests).toBe(2);
    const tokens = during.map((r) => r.body.access_token);
    // Only the caller that won the lease waits for (and gets) the new token; the
    // other callers of its instance, which joined its lookup, and the other 9
    // instances keep serving the current one.
    expect(tokens.filter((t) => t === first.body.access_token)).toHaveLength(49);
    expect(new Set(tokens).size).toBe(2);
    expect(after.body.access_token).not.toBe(first.body.access_token);
    expect(after.body.expires_in).toBeGreaterThan(7100);
  });

  it('never serves an expired item that is still in the table (late TTL deletion)', async () => {
    // Prepare: the test table has no TTL, so the expired item stays
    const clock = new TestClock();
    const first = await vend(makeInstance({ sim, clock, client, table }), scoped);
    clock.advance(7201);

    // Act
    const later = await vend(makeInstance({ sim, clock, client, table }), scoped);

    // Assess
    expect(later.status).toBe(200);
    expect(later.body.access_token).not.toBe(first.body.access_token);
    expect(sim.stats.tokenRequests).toBe(2);
  });

  it('serves a token with at least min_ttl left, re-minting when the cached one is too short', async () => {
    const clock = new TestClock();
    const first = await vend(makeInstance({ sim, clock, client, table }), scoped);
    clock.advance(7200 - 1000);

    const short = await vend(
      makeInstance({ sim, clock, client, table }),
      urlEvent({ query: 'min_ttl=3600&scope=ba_demo_1' }),
    );

    expect(short.body.access_token).not.toBe(first.body.access_token);
    expect(short.body.expires_in as number).toBeGreaterThan(3600);
  });

  it('takes over a lease whose holder died, once the lease runs out', async () => {
    // Prepare: a holder took the lease 1 s ago and died without a token
    const clock = new TestClock({ virtualSleep: true });
    const store = new DynamoDbTokenStore(client, table);
    await store.tryAcquireLease(
      'TOKEN#ba_demo_1',
      'dead-instance',
      clock.now(),
      clock.now() + 10_000,
    );
    const started = clock.now();

    // Act
    const result = await vend(makeInstance({ sim, clock, client, table }), scoped);

    // Assess
    expect(result.status).toBe(200);
    expect(sim.stats.tokenRequests).toBe(1);
    expect(clock.now() - started).toBeGreaterThanOrEqual(10_000);
    const item = await store.get('TOKEN#ba_demo_1');
    expect(item?.leaseOwner).toBeUndefined();
    expect(item?.token?.expiresAt).toBe(result.body.expires_at);
  });

  it('answers 503 when the lease holder neither stores a token nor releases within the wait bound', async () => {
    const clock = new TestClock({ virtualSleep: true });
    const store = new DynamoDbTokenStore(client, table);
    await keepRenewingLease(store, 'TOKEN#ba_demo_1', clock);

    const result = await vend(makeInstance({ sim, clock, client, table }), scoped);

    expect(result.status).toBe(503);
    expect(result.body.code).toBe('upstream_unavailable');
    expect(result.headers['retry-after']).toMatch(/^\d+$/);
    expect(sim.stats.tokenRequests).toBe(0);
  });

  it('re-mints tokens of an older secret version once a rotation is seen', async () => {
    // Prepare
    const clock = new TestClock();
    const credentials = demoCredentials('v1');
    const instance = makeInstance({ sim, clock, client, table, credentials });
    const before = await vend(instance, scoped);
    const rotated = { key: 'rotated_key', secret: 'rotated_secret_value' };
    sim.setCredentials(rotated);
    credentials.set({ ...rotated, version: 'v2' });

    // Act
    const after = await vend(instance, scoped);
    const other = await vend(makeInstance({ sim, clock, client, table, credentials }), scoped);

    // Assess
    expect(after.status).toBe(200);
    expect(after.body.access_token).not.toBe(before.body.access_token);
    expect(other.body.access_token).toBe(after.body.access_token);
    expect(sim.stats.tokenRequests).toBe(2);
    const item = await new DynamoDbTokenStore(client, table).get('TOKEN#ba_demo_1');
    expect(item?.token?.credentialsVersion).toBe('v2');
  });

  it('treats an item sealed under another key as a miss and re-mints', async () => {
    const clock = new TestClock();
    const first = await vend(
      makeInstance({ sim, clock, client, table, sealer: new AesGcmSealer() }),
      scoped,
    );

    const second = await vend(
      makeInstance({ sim, clock, client, table, sealer: new AesGcmSealer() }),
      scoped,
    );

    expect(second.status).toBe(200);
    expect(second.body.access_token).not.toBe(first.body.access_token);
  });

  it('stores the token sealed, with ttl = expires_at - 60 and the provider created_at', async () => {
    const clock = new TestClock();
    const result = await vend(makeInstance({ sim, clock, client, table }), scoped);

    const { GetItemCommand } = await import('@aws-sdk/client-dynamodb');
    const out = await client.send(
      new GetItemCommand({ TableName: table, Key: { pk: { S: 'TOKEN#ba_demo_1' } } }),
    );
    const item = out.Item ?? {};
    expect(JSON.stringify(item)).not.toContain(result.body.access_token as string);
    expect(Buffer.from(item.sealed_token?.B ?? []).toString('utf8')).not.toContain(
      result.body.access_token as string,
    );
    expect(Number(item.ttl?.N)).toBe((result.body.expires_at as number) - 60);
    expect(Number(item.expires_at?.N) - Number(item.issued_at?.N)).toBe(7200);
    expect(item.provider_created_at?.N).toBeDefined();
    expect(item.credentials_version?.S).toBe('v1');
    expect(item.scope?.S).toBe('ba_demo_1');
  });

  it('caches the unscoped token under its own key', async () => {
    const clock = new TestClock();
    const instance = makeInstance({ sim, clock, client, table });
    const partner = urlEvent({ arn: 'arn:aws:sts::111122223333:assumed-role/key-issuer/job' });

    const first = await vend(instance, partner);
    const second = await vend(makeInstance({ sim, clock, client, table }), partner);

    expect(first.status).toBe(200);
    expect(first.body.scope).toBeUndefined();
    expect(second.body.access_token).toBe(first.body.access_token);
    expect(sim.stats.tokenRequestsByScope['']).toBe(1);
    const item = await new DynamoDbTokenStore(client, table).get('TOKEN#~unscoped');
    expect(item?.token?.scope).toBeUndefined();
  });
});

describe('degraded mode', () => {
  it('serves straight from the provider, then from L1, when DynamoDB is unreachable', async () => {
    // Prepare: a store whose endpoint has nothing listening
    const { DynamoDBClient } = await import('@aws-sdk/client-dynamodb');
    const dead = new DynamoDBClient({
      endpoint: 'http://127.0.0.1:9',
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    });
    const clock = new TestClock();
    const instance = makeInstance({ sim, clock, client: dead, table: 'unreachable' });

    // Act
    const first = await vend(instance, scoped);
    const second = await vend(instance, scoped);

    // Assess
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.body.access_token).toBe(first.body.access_token);
    expect(sim.stats.tokenRequests).toBe(1);
    dead.destroy();
  });
});
