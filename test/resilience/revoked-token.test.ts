/**
 * Fault matrix, a provider that revokes tokens early, end to end: the client
 * library signing real SigV4 requests to the local Function URL, two vend
 * instances over DynamoDB Local, and the provider simulator, whose Partner
 * API answers 401 to a revoked token. A 401 from the provider is the caller's
 * signal: `invalidate` plus a new `getToken` must bring a token that works,
 * even when the revoked one still has far more than any min_ttl left.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TokenVendingClient } from '../../client/index.js';
import { DynamoDbTokenStore } from '../../functions/adapters/dynamodb-token-store.js';
import { type LocalFunctionUrl, startLocalFunctionUrl } from '../../local/function-url.js';
import { type ProviderSimulator, startProviderSimulator } from '../../local/provider-simulator.js';
import { TestClock } from '../support/clock.js';
import { createTestTable, dynamoClient } from '../support/dynamodb.js';
import { fleetInstance } from '../support/fleet.js';
import { KEY_ISSUER } from '../support/key-job-harness.js';

let sim: ProviderSimulator;
let client: DynamoDBClient;
const urls: LocalFunctionUrl[] = [];

beforeAll(async () => {
  sim = await startProviderSimulator();
  client = dynamoClient();
});
afterAll(async () => {
  for (const url of urls) await url.close();
  await sim.close();
  client.destroy();
});

/** Calls the provider's Partner API with the token, as the key-issuing job does. */
async function partnerCall(token: string): Promise<number> {
  const response = await fetch(
    `${sim.url}/partner/v1/basic_auth/business_applications/ba_demo_1/keys`,
    {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
    },
  );
  await response.body?.cancel();
  return response.status;
}

it('after the provider revokes a young token, invalidate and a new getToken bring a new token to every caller, minted once', async () => {
  // Prepare: two vend instances behind two local URLs, two caller processes
  const clock = new TestClock({ virtualSleep: true });
  const store = new DynamoDbTokenStore(client, await createTestTable(client));
  for (let i = 0; i < 2; i++) {
    const instance = fleetInstance({ sim, store, clock });
    urls.push(await startLocalFunctionUrl({ handler: instance.app, identities: [KEY_ISSUER] }));
  }
  const callers = urls.map(
    (url) => new TokenVendingClient({ url: url.url, credentials: KEY_ISSUER, clock }),
  );
  const first = await callers[0]!.getToken();
  expect((await callers[1]!.getToken()).accessToken).toBe(first.accessToken);
  expect(await partnerCall(first.accessToken)).toBe(201);
  clock.advance(600); // the token has 6600 s left: more than any min_ttl

  // Act: the provider revokes it; each caller sees the 401 and asks again
  sim.revokeTokens();
  const rejected = await partnerCall(first.accessToken);
  const renewed = [];
  for (const caller of callers) {
    caller.invalidate(null);
    renewed.push(await caller.getToken({ minTtl: 3600 }));
  }

  // Assess
  expect(rejected).toBe(401);
  for (const token of renewed) {
    expect(token.accessToken === first.accessToken).toBe(false); // no token in the output
    expect(await partnerCall(token.accessToken)).toBe(201);
  }
  expect(renewed[1]!.accessToken).toBe(renewed[0]!.accessToken);
  expect(sim.stats.tokenRequests).toBe(2);
});
