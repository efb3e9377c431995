/**
 * The lease conditions of the TokenStore port, on both stores: DynamoDB
 * (Local) and the in-memory store the unit tests use, so the unit tests of the
 * lease protocol run against the same rules as production.
 */
import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoDbTokenStore } from '../../functions/adapters/dynamodb-token-store.js';
import { StoreUnavailableError } from '../../functions/core/errors.js';
import {
  type LeaseTakeover,
  NO_REVISION,
  type Revision,
  type TokenStore,
} from '../../functions/core/ports.js';
import { MemoryTokenStore } from '../support/memory-store.js';
import { useSimulatorAndTable } from '../support/simulator-and-table.js';

const shared = useSimulatorAndTable();
const PK = 'TOKEN#ba_demo_1';
const NOW = 1_800_000_000_500;
const HELD = { owner: 'a', untilMs: NOW + 10_000 };

const stores: Array<[string, () => TokenStore]> = [
  ['DynamoDB', () => new DynamoDbTokenStore(shared.client, shared.table)],
  ['memory', () => new MemoryTokenStore()],
];

describe.each(stores)('%s store: tryAcquireLease', (_name, makeStore) => {
  const held = async () => {
    const store = makeStore();
    expect(await store.tryAcquireLease(PK, HELD.owner, NOW, HELD.untilMs)).toBe(true);
    return store;
  };
  const take = (store: TokenStore, takeover?: LeaseTakeover, seenRevision?: Revision) =>
    store.tryAcquireLease(PK, 'w', NOW, NOW + 10_000, seenRevision, takeover);

  it('takes a free lease, and never a held one it is not told it may take, whatever the time', async () => {
    const store = await held();

    expect(await store.tryAcquireLease(PK, 'w', NOW + 3_600_000, NOW + 3_610_000)).toBe(false);
    expect((await store.get(PK))?.leaseOwner).toBe('a');
  });

  it.each([
    ['is exactly the watched lease', { holder: HELD }, true],
    ['has another owner than the watched one', { holder: { ...HELD, owner: 'b' } }, false],
    ['has another end than the watched one', { holder: { ...HELD, untilMs: NOW + 9_999 } }, false],
    ['was watched without an owner, but has one', { holder: { untilMs: HELD.untilMs } }, false],
  ] as const)('a held lease that %s: taken %s', async (_case, takeover, taken) => {
    const store = await held();

    expect(await take(store, takeover)).toBe(taken);
    expect((await store.get(PK))?.leaseOwner).toBe(taken ? 'w' : 'a');
  });

  it('takes the watched lease only while the token is still the one read', async () => {
    const store = await held();

    const stored = { expiresAt: 1_800_007_200, sealed: new Uint8Array([1, 2, 3]) };
    expect(await take(store, { holder: HELD }, stored)).toBe(false);
    expect(await take(store, { holder: HELD }, NO_REVISION)).toBe(true);
  });

  it('answers taken to the caller whose write was applied but whose answer was lost (the retry is refused)', async () => {
    // Regression (review): only the first look knew its own applied lease; a
    // lease attempt whose answer was lost waited out its own lease (10 s).
    const store = makeStore();
    expect(await store.tryAcquireLease(PK, 'a', NOW, NOW + 10_000, NO_REVISION)).toBe(true);

    const retry = await store.tryAcquireLease(PK, 'a', NOW, NOW + 10_000, NO_REVISION);
    const other = await store.tryAcquireLease(PK, 'b', NOW, NOW + 10_000, NO_REVISION);
    const later = await store.tryAcquireLease(PK, 'a', NOW + 1, NOW + 10_001, NO_REVISION);

    expect([retry, other, later]).toEqual([true, false, false]);
    expect(await store.get(PK)).toMatchObject({ leaseOwner: 'a', leaseUntil: NOW + 10_000 });
  });

  it('tells apart two tokens stored in the same second with the same lifetime', async () => {
    // Regression (review): the revision was expires_at alone, so a caller that
    // read the first token took the lease over the second and minted again.
    const store = makeStore();
    await store.tryAcquireLease(PK, 'a', NOW, NOW + 10_000);
    await store.putToken(PK, storedToken(1_800_007_200), 'a');
    const first = (await store.get(PK))?.revision;
    await store.tryAcquireLease(PK, 'b', NOW, NOW + 10_000, first);
    await store.putToken(PK, storedToken(1_800_007_200, [4, 5, 6]), 'b');
    const second = (await store.get(PK))?.revision;

    expect(await store.tryAcquireLease(PK, 'c', NOW, NOW + 10_000, first)).toBe(false);
    expect(await store.tryAcquireLease(PK, 'd', NOW, NOW + 10_000, second)).toBe(true);
    expect((await store.get(PK))?.leaseOwner).toBe('d');
  });
});

describe.each(stores)(
  "%s store: leaseIfAbsent (a cold instance's first look)",
  (_name, makeStore) => {
    it('creates the missing item holding the lease for exactly one of many concurrent callers; the others get that item', async () => {
      const store = makeStore();

      const looks = await Promise.all(
        Array.from({ length: 20 }, (_, i) => store.leaseIfAbsent(PK, `i${i}`, NOW, NOW + 10_000)),
      );

      const winners = looks.flatMap((look, i) => (look.leased ? [`i${i}`] : []));
      expect(winners).toHaveLength(1);
      for (const look of looks.filter((l) => !l.leased)) {
        expect(look.item).toMatchObject({ leaseOwner: winners[0], leaseUntil: NOW + 10_000 });
      }
      expect(await store.putToken(PK, storedToken(1_800_007_200), winners[0] as string)).toBe(true);
    });

    it('answers leased to the caller whose write was applied but whose answer was lost (the retry is refused)', async () => {
      const store = makeStore();
      expect(await store.leaseIfAbsent(PK, 'a', NOW, NOW + 10_000)).toEqual({ leased: true });

      const retry = await store.leaseIfAbsent(PK, 'a', NOW, NOW + 10_000);
      const other = await store.leaseIfAbsent(PK, 'b', NOW, NOW + 10_000);
      const later = await store.leaseIfAbsent(PK, 'a', NOW + 5, NOW + 10_005);

      expect(retry).toEqual({ leased: true });
      expect(other.leased).toBe(false);
      expect(later.leased).toBe(false);
    });

    it('changes nothing on an item that exists, and hands it back as a strongly consistent read would', async () => {
      const store = makeStore();
      await store.tryAcquireLease(PK, 'a', NOW, NOW + 10_000);
      await store.putToken(PK, storedToken(1_800_007_200), 'a', { usedAt: 1_800_000_000 });
      const before = await store.get(PK);

      const look = await store.leaseIfAbsent(PK, 'b', NOW, NOW + 10_000);

      expect(look).toEqual({ leased: false, item: before });
      expect(await store.get(PK)).toEqual(before);
    });
  },
);

it('DynamoDB store: a refusal that carries no item (an older DynamoDB) is followed by a read', async () => {
  // Prepare: the client drops the item DynamoDB hands back on the refusal
  const store = new DynamoDbTokenStore(shared.client, shared.table);
  await store.tryAcquireLease(PK, 'a', NOW, NOW + 10_000);
  await store.putToken(PK, storedToken(1_800_007_200), 'a');
  const sent: string[] = [];
  const stripping = {
    send: async (command: { constructor: { name: string } }) => {
      sent.push(command.constructor.name);
      try {
        return await shared.client.send(command as never);
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) error.Item = undefined;
        throw error;
      }
    },
  } as unknown as DynamoDBClient;

  // Act
  const look = await new DynamoDbTokenStore(stripping, shared.table).leaseIfAbsent(
    PK,
    'b',
    NOW,
    NOW + 10_000,
  );

  // Assess
  expect(look).toEqual({ leased: false, item: await store.get(PK) });
  expect(sent).toEqual(['UpdateItemCommand', 'GetItemCommand']);
});

/** A client that records what it sends, and answers UpdateItem with `failure` when given one. */
function recording(failure?: () => Error) {
  const sent: string[] = [];
  const client = {
    send: async (command: { constructor: { name: string } }) => {
      sent.push(command.constructor.name);
      if (failure && command.constructor.name === 'UpdateItemCommand') throw failure();
      return shared.client.send(command as never);
    },
  } as unknown as DynamoDBClient;
  return { sent, store: new DynamoDbTokenStore(client, shared.table) };
}

it('DynamoDB store: a first look on an item that exists is one call: the refusal carries the item, no read follows', async () => {
  const store = new DynamoDbTokenStore(shared.client, shared.table);
  await store.tryAcquireLease(PK, 'a', NOW, NOW + 10_000);
  const { sent, store: watched } = recording();

  const look = await watched.leaseIfAbsent(PK, 'b', NOW, NOW + 10_000);

  expect(look).toMatchObject({ leased: false, item: { leaseOwner: 'a' } });
  expect(sent).toEqual(['UpdateItemCommand']);
});

it.each([
  ['throttled', 'ProvisionedThroughputExceededException', true],
  ['refused access', 'AccessDeniedException', false],
])(
  'DynamoDB store: a lease write %s is an outage, never a "no" (and says whether it was throttled)',
  async (_case, name, throttled) => {
    const failure = () => Object.assign(new Error('injected'), { name });
    const { store } = recording(failure);

    const look = () => store.leaseIfAbsent(PK, 'b', NOW, NOW + 10_000);
    const attempt = () => store.tryAcquireLease(PK, 'b', NOW, NOW + 10_000);

    // One at a time: a call started up front could reject unhandled meanwhile.
    for (const call of [look, attempt]) {
      const failed = call();
      await expect(failed).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(failed).rejects.toMatchObject({ throttled });
    }
  },
);

/** A token as the core stores it, expiring at `expiresAt` (epoch seconds), sealed as `sealed`. */
const storedToken = (expiresAt: number, sealed = [1, 2, 3]) => ({
  tokenType: 'Bearer' as const,
  scope: 'ba_demo_1',
  issuedAt: expiresAt - 7200,
  expiresAt,
  credentialsVersion: 'v1',
  sealed: new Uint8Array(sealed),
});

describe.each(stores)('%s store: failures and use marks', (_name, makeStore) => {
  it('only the holder of the lease stores a token or gives the lease up', async () => {
    const store = makeStore();
    await store.tryAcquireLease(PK, 'a', NOW, NOW + 10_000);

    const put = await store.putToken(PK, storedToken(1_800_007_200), 'b');
    await store.releaseLease(PK, 'b', { atMs: NOW, code: 'upstream_unavailable' });

    expect(put).toBe(false);
    const item = await store.get(PK);
    expect(item).toMatchObject({ leaseOwner: 'a', revision: NO_REVISION });
    expect(item?.failure).toBeUndefined();
  });

  it('given the lease it names, stores a token or gives the lease up only under that very lease, not a later one of the same owner', async () => {
    // Regression (review): two lookups of one instance could hold the lease in
    // turn (a takeover by the same owner); the first one's late release removed the second's.
    const store = makeStore();
    await store.tryAcquireLease(PK, 'a', NOW, NOW + 10_000);
    const held = { owner: 'a', untilMs: NOW + 10_000 };
    await store.tryAcquireLease(PK, 'a', NOW + 10_001, NOW + 20_001, undefined, { holder: held });

    const put = await store.putToken(PK, storedToken(1_800_007_200), 'a', {
      leaseUntil: NOW + 10_000,
    });
    await store.releaseLease(PK, 'a', { atMs: NOW, code: 'upstream_unavailable' }, NOW + 10_000);

    expect(put).toBe(false);
    expect(await store.get(PK)).toMatchObject({ leaseOwner: 'a', leaseUntil: NOW + 20_001 });
    expect((await store.get(PK))?.failure).toBeUndefined();
    expect(
      await store.putToken(PK, storedToken(1_800_007_200), 'a', { leaseUntil: NOW + 20_001 }),
    ).toBe(true);
  });

  it('answers stored to the holder whose token write was applied but whose answer was lost (the retry is refused)', async () => {
    // Regression (review): the retry, refused because the write had removed the
    // lease, answered "taken over": a false warning, and no local use mark.
    const store = makeStore();
    await store.tryAcquireLease(PK, 'a', NOW, NOW + 10_000);
    const token = storedToken(1_800_007_200, [7, 7, 7]);
    expect(await store.putToken(PK, token, 'a', { leaseUntil: NOW + 10_000 })).toBe(true);

    const retry = await store.putToken(PK, token, 'a', { leaseUntil: NOW + 10_000 });
    const another = await store.putToken(PK, storedToken(1_800_007_200, [8]), 'a', {
      leaseUntil: NOW + 10_000,
    });

    expect([retry, another]).toEqual([true, false]);
    expect((await store.get(PK))?.token?.sealed).toEqual(new Uint8Array([7, 7, 7]));
  });

  it('a token stored under the lease clears the failure recorded before it', async () => {
    // Prepare: a refresh failed and was recorded; another caller takes the lease
    const store = makeStore();
    await store.tryAcquireLease(PK, 'a', NOW, NOW + 10_000);
    await store.releaseLease(PK, 'a', { atMs: NOW, code: 'upstream_unavailable' });
    const failed = await store.get(PK);
    await store.tryAcquireLease(PK, 'b', NOW + 6000, NOW + 16_000);

    // Act
    const stored = await store.putToken(PK, storedToken(1_800_007_206), 'b');

    // Assess
    expect(failed?.failure).toEqual({ atMs: NOW, code: 'upstream_unavailable' });
    expect(stored).toBe(true);
    expect((await store.get(PK))?.failure).toBeUndefined();
  });

  it('a token stored under the lease clears a failed seal recorded before it', async () => {
    const store = makeStore();
    await store.tryAcquireLease(PK, 'a', NOW, NOW + 10_000);
    await store.releaseLease(PK, 'a', { atMs: NOW, code: 'sealer_unavailable' });
    const failed = await store.get(PK);
    await store.tryAcquireLease(PK, 'b', NOW + 6000, NOW + 16_000);

    await store.putToken(PK, storedToken(1_800_007_206), 'b');

    expect(failed?.failure).toEqual({ atMs: NOW, code: 'sealer_unavailable' });
    expect((await store.get(PK))?.failure).toBeUndefined();
  });

  it.each([
    ['a failed seal, then a provider failure', 'sealer_unavailable', 'upstream_unavailable'],
    ['a provider failure, then a failed seal', 'upstream_unavailable', 'sealer_unavailable'],
  ])(
    'after %s, the item records the last one written, whatever the clocks said',
    async (_case, first, last) => {
      // Regression (review): the later timestamp won, and the two come from two
      // instances' clocks: one 30 s ahead hid the newest failure from everyone.
      const store = makeStore();
      await store.tryAcquireLease(PK, 'a', NOW, NOW + 10_000);
      await store.releaseLease(PK, 'a', { atMs: NOW + 30_000, code: first });
      await store.tryAcquireLease(PK, 'b', NOW + 11_000, NOW + 21_000);

      await store.releaseLease(PK, 'b', { atMs: NOW + 11_000, code: last });

      expect((await store.get(PK))?.failure).toEqual({ atMs: NOW + 11_000, code: last });
    },
  );

  it('a use mark never creates an item, and never moves back', async () => {
    const store = makeStore();

    await store.markUsed(PK, 1_800_000_100);
    const none = await store.get(PK);
    await store.tryAcquireLease(PK, 'a', NOW, NOW + 10_000);
    await store.markUsed(PK, 1_800_000_100);
    await store.markUsed(PK, 1_800_000_050);

    expect(none).toBeUndefined();
    expect((await store.get(PK))?.lastUsedAt).toBe(1_800_000_100);
  });
});

it('DynamoDB store: a provider failure recorded after a failed seal leaves no sealer_failed_at behind', async () => {
  // The previous release's token write clears failed_at but not the newer
  // attribute: one left behind would reappear as a failure once it stored.
  const store = new DynamoDbTokenStore(shared.client, shared.table);
  await store.tryAcquireLease(PK, 'a', NOW, NOW + 10_000);
  await store.releaseLease(PK, 'a', { atMs: NOW, code: 'sealer_unavailable' });
  await store.tryAcquireLease(PK, 'b', NOW + 11_000, NOW + 21_000);

  await store.releaseLease(PK, 'b', { atMs: NOW + 11_000, code: 'upstream_unavailable' });

  const raw = await shared.client.send(
    new GetItemCommand({ TableName: shared.table, Key: { pk: { S: PK } } }),
  );
  expect(raw.Item).not.toHaveProperty('sealer_failed_at');
  expect(raw.Item?.failed_code).toEqual({ S: 'upstream_unavailable' });
});

it("DynamoDB store: a provider's Retry-After is read back with its failure, and a later failure without one clears it", async () => {
  const store = new DynamoDbTokenStore(shared.client, shared.table);
  await store.tryAcquireLease(PK, 'a', NOW, NOW + 10_000);
  await store.releaseLease(PK, 'a', {
    atMs: NOW,
    code: 'upstream_unavailable',
    retryAfterSeconds: 30,
  });
  const hinted = (await store.get(PK))?.failure;
  await store.tryAcquireLease(PK, 'b', NOW + 31_000, NOW + 41_000);

  await store.releaseLease(PK, 'b', { atMs: NOW + 31_000, code: 'upstream_error' });

  expect(hinted).toEqual({ atMs: NOW, code: 'upstream_unavailable', retryAfterSeconds: 30 });
  expect((await store.get(PK))?.failure).toEqual({ atMs: NOW + 31_000, code: 'upstream_error' });
});

it('DynamoDB store: a recorded Retry-After reads back bounded at 60 s, whatever the item holds', async () => {
  const store = new DynamoDbTokenStore(shared.client, shared.table);
  const write = (seconds: string) =>
    shared.client.send(
      new PutItemCommand({
        TableName: shared.table,
        Item: {
          pk: { S: PK },
          failed_at: { N: String(NOW) },
          failed_code: { S: 'upstream_unavailable' },
          failed_retry_after: { M: { at: { N: String(NOW) }, seconds: { N: seconds } } },
        },
      }),
    );

  await write('1e100');
  const huge = (await store.get(PK))?.failure;
  await write('-5');
  const negative = (await store.get(PK))?.failure;

  expect(huge?.retryAfterSeconds).toBe(60);
  expect(negative).toEqual({ atMs: NOW, code: 'upstream_unavailable' });
});

it("DynamoDB store: a failure the previous release writes is never read with an older failure's Retry-After", async () => {
  // During a canary the previous release records a failure as it always did
  // (failed_at, failed_code) and leaves failed_retry_after alone.
  const store = new DynamoDbTokenStore(shared.client, shared.table);
  await store.tryAcquireLease(PK, 'a', NOW, NOW + 10_000);
  await store.releaseLease(PK, 'a', {
    atMs: NOW,
    code: 'upstream_unavailable',
    retryAfterSeconds: 60,
  });

  await shared.client.send(
    new UpdateItemCommand({
      TableName: shared.table,
      Key: { pk: { S: PK } },
      UpdateExpression: 'SET failed_at = :at, failed_code = :code',
      ExpressionAttributeValues: {
        ':at': { N: String(NOW + 61_000) },
        ':code': { S: 'upstream_unavailable' },
      },
    }),
  );

  expect((await store.get(PK))?.failure).toEqual({
    atMs: NOW + 61_000,
    code: 'upstream_unavailable',
  });
});

it('DynamoDB store: a failure recorded without a code (releases before failed_code) reads as a provider outage', async () => {
  // Releases before failed_code recorded every failed refresh as failed_at alone:
  // their callers answer 503 upstream_unavailable during the back-off, and so must ours.
  const store = new DynamoDbTokenStore(shared.client, shared.table);
  await shared.client.send(
    new PutItemCommand({
      TableName: shared.table,
      Item: { pk: { S: PK }, failed_at: { N: String(NOW) } },
    }),
  );

  expect((await store.get(PK))?.failure).toEqual({ atMs: NOW, code: 'upstream_unavailable' });
});

it('DynamoDB store: an error other than a failed condition is an outage, never a "no"', async () => {
  // A table that is not there: every write fails, and none may read as "lease held".
  const store = new DynamoDbTokenStore(shared.client, `${shared.table}-missing`);

  const lease = await store.tryAcquireLease(PK, 'a', NOW, NOW + 10_000).catch((e: unknown) => e);
  const look = await store.leaseIfAbsent(PK, 'a', NOW, NOW + 10_000).catch((e: unknown) => e);
  const put = await store.putToken(PK, storedToken(1_800_007_200), 'a').catch((e: unknown) => e);

  expect(lease).toBeInstanceOf(StoreUnavailableError);
  expect(look).toBeInstanceOf(StoreUnavailableError);
  expect(put).toBeInstanceOf(StoreUnavailableError);
});

it("DynamoDB store: a lease keeps its item from expiring: a day without a token (a first look's lease too), else the token ttl", async () => {
  // Prepare
  const store = new DynamoDbTokenStore(shared.client, shared.table);
  const ttl = async (pk = PK) =>
    Number(
      (
        await shared.client.send(
          new GetItemCommand({
            TableName: shared.table,
            Key: { pk: { S: pk } },
            ConsistentRead: true,
          }),
        )
      ).Item?.ttl?.N,
    );
  const expiresAt = Math.floor(NOW / 1000) + 7200;

  // Act
  await store.tryAcquireLease(PK, 'a', NOW, NOW + 10_000, NO_REVISION);
  const leaseOnly = await ttl();
  await store.leaseIfAbsent('TOKEN#ba_demo_2', 'a', NOW, NOW + 10_000);
  const firstLook = await ttl('TOKEN#ba_demo_2');
  await store.putToken(PK, storedToken(expiresAt), 'a');
  await store.tryAcquireLease(PK, 'b', NOW + 20_000, NOW + 30_000, (await store.get(PK))?.revision);
  const besideToken = await ttl();

  // Assess
  expect(leaseOnly).toBe(Math.floor(NOW / 1000) + 86_400);
  expect(firstLook).toBe(Math.floor(NOW / 1000) + 86_400);
  expect(besideToken).toBe(expiresAt - 60);
});

it('DynamoDB store: a lease beside a token with a minute or less left keeps its item a day, not at the token ttl already past', async () => {
  // Prepare: the token's own ttl (expires_at - 60) is past; DynamoDB may sweep the item any time.
  const store = new DynamoDbTokenStore(shared.client, shared.table);
  const later = NOW + 20_000;
  await store.tryAcquireLease(PK, 'a', NOW, NOW + 10_000, NO_REVISION);
  await store.putToken(PK, storedToken(Math.floor(later / 1000) + 30), 'a');

  // Act
  const taken = await store.tryAcquireLease(
    PK,
    'b',
    later,
    later + 10_000,
    (await store.get(PK))?.revision,
  );

  // Assess
  const item = await shared.client.send(
    new GetItemCommand({ TableName: shared.table, Key: { pk: { S: PK } }, ConsistentRead: true }),
  );
  expect(taken).toBe(true);
  expect(item.Item?.sealed_token?.B).toBeDefined();
  expect(Number(item.Item?.ttl?.N)).toBe(Math.floor(later / 1000) + 86_400);
});

it('DynamoDB store: a watched lease whose lease_owner is not a string (a hand edit, read as no owner) can be taken', async () => {
  // Prepare
  const store = new DynamoDbTokenStore(shared.client, shared.table);
  await shared.client.send(
    new PutItemCommand({
      TableName: shared.table,
      Item: { pk: { S: PK }, lease_owner: { N: '7' }, lease_until: { N: String(HELD.untilMs) } },
    }),
  );
  const item = await store.get(PK);

  // Act
  const taken = await store.tryAcquireLease(PK, 'w', NOW, NOW + 10_000, NO_REVISION, {
    holder: { untilMs: item?.leaseUntil ?? 0 },
  });

  // Assess
  expect(item?.leaseOwner).toBeUndefined();
  expect(taken).toBe(true);
});

describe.each(stores)('%s store: the mint duration travels with the token', (_name, makeStore) => {
  it('stores mintMs with the token and reads it back, so waiters on any instance see it', async () => {
    // Prepare
    const store = makeStore();
    await store.tryAcquireLease(PK, 'a', NOW, NOW + 10_000);
    const token = {
      tokenType: 'Bearer' as const,
      scope: 'ba_demo_1',
      issuedAt: 1_800_000_000,
      expiresAt: 1_800_007_200,
      credentialsVersion: 'v1',
      sealed: new Uint8Array([1, 2, 3]),
      mintMs: 137,
    };

    // Act
    await store.putToken(PK, token, 'a');

    // Assess
    expect((await store.get(PK))?.token?.mintMs).toBe(137);
  });
});

it('DynamoDB store: a throttled call is told apart from an unreachable table', async () => {
  // DynamoDB Local never throttles: a client that answers as DynamoDB does under a hot key.
  const refuse = (name: string) => ({
    send: async () => {
      throw Object.assign(new Error('refused'), { name });
    },
  });
  const throttledStore = new DynamoDbTokenStore(
    refuse('ProvisionedThroughputExceededException') as never,
    shared.table,
  );
  const downStore = new DynamoDbTokenStore(refuse('TimeoutError') as never, shared.table);

  const throttled = await throttledStore.get(PK).catch((error: unknown) => error);
  const down = await downStore.get(PK).catch((error: unknown) => error);

  expect(throttled).toMatchObject({ name: 'StoreUnavailableError', throttled: true });
  expect(down).toMatchObject({ name: 'StoreUnavailableError', throttled: false });
});
