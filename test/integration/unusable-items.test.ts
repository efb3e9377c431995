import { type AttributeValue, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoDbTokenStore } from '../../functions/adapters/dynamodb-token-store.js';
import { TestClock } from '../support/clock.js';
import { useSimulatorAndTable } from '../support/simulator-and-table.js';
import { makeInstance, SHARED_SEALER, urlEvent, vend } from '../support/vend-harness.js';

// An item the core cannot use as a token (an older schema, a hand edit) must
// be replaced by the next refresh, never wedge its scope until TTL deletes it.

const shared = useSimulatorAndTable();

const PK = 'TOKEN#ba_demo_1';
const scoped = urlEvent({ query: 'scope=ba_demo_1' });

async function complete(clock: TestClock): Promise<Record<string, AttributeValue>> {
  const now = Math.floor(clock.now() / 1000);
  return {
    pk: { S: PK },
    sealed_token: { B: await SHARED_SEALER.seal('tok-hand-edited', PK) },
    token_type: { S: 'Bearer' },
    scope: { S: 'ba_demo_1' },
    issued_at: { N: String(now - 100) },
    expires_at: { N: String(now + 7100) },
    ttl: { N: String(now + 7040) },
    credentials_version: { S: 'v1' },
  };
}

const without = (item: Record<string, AttributeValue>, name: string) => {
  const { [name]: _, ...rest } = item;
  return rest;
};

describe('no item may wedge its scope', () => {
  it.each([
    [
      'no credentials_version (an older schema)',
      (i: Record<string, AttributeValue>) => without(i, 'credentials_version'),
    ],
    ['no sealed_token', (i: Record<string, AttributeValue>) => without(i, 'sealed_token')],
    ['no issued_at', (i: Record<string, AttributeValue>) => without(i, 'issued_at')],
    [
      'a token_type other than Bearer',
      (i: Record<string, AttributeValue>) => ({ ...i, token_type: { S: 'mac' } }),
    ],
    [
      'expires_at written as a string',
      (i: Record<string, AttributeValue>) => ({ ...i, expires_at: { S: 'soon' } }),
    ],
    [
      'lease_until written as a string',
      (i: Record<string, AttributeValue>) => ({
        ...without(i, 'credentials_version'),
        lease_owner: { S: 'x' },
        lease_until: { S: 'later' },
      }),
    ],
    [
      'only a lease_owner, no token',
      (i: Record<string, AttributeValue>) => ({
        pk: i.pk as AttributeValue,
        lease_owner: { S: 'x' },
      }),
    ],
  ])('an item with %s is replaced at once by the next vend', async (_label, edit) => {
    // Prepare
    const clock = new TestClock({ virtualSleep: true });
    await shared.client.send(
      new PutItemCommand({ TableName: shared.table, Item: edit(await complete(clock)) }),
    );
    const started = clock.now();

    // Act
    const result = await vend(
      makeInstance({ sim: shared.sim, clock, client: shared.client, table: shared.table }),
      scoped,
    );

    // Assess
    expect(result.status).toBe(200);
    expect(result.body.access_token).not.toBe('tok-hand-edited');
    expect(shared.sim.stats.tokenRequests).toBe(1);
    expect(clock.now() - started).toBeLessThan(1000); // no lease wait
    const item = await new DynamoDbTokenStore(shared.client, shared.table).get(PK);
    expect(item?.token?.credentialsVersion).toBe('v1');
    expect(item?.leaseOwner).toBeUndefined();
  });

  it('a complete item is still served, not replaced', async () => {
    const clock = new TestClock({ virtualSleep: true });
    await shared.client.send(
      new PutItemCommand({ TableName: shared.table, Item: await complete(clock) }),
    );

    const result = await vend(
      makeInstance({ sim: shared.sim, clock, client: shared.client, table: shared.table }),
      scoped,
    );

    expect(result.body.access_token).toBe('tok-hand-edited');
    expect(shared.sim.stats.tokenRequests).toBe(0);
  });
});
