/**
 * Fault matrix, KMS: the sealer throttles or fails while DynamoDB and the
 * provider work. A token in the table stays the shared one (no instance
 * re-mints over it because it could not unseal it just now), callers are
 * served degraded, and a cold stampede never takes the lease over instance
 * after instance, each waiting out KMS before giving it up again.
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import {
  DecryptCommand,
  EncryptCommand,
  KMSClient,
  KMSServiceException,
} from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeEach, expect, it, vi } from 'vitest';
import { DynamoDbTokenStore } from '../../functions/adapters/dynamodb-token-store.js';
import { AesGcmSealer, KmsSealer } from '../../functions/adapters/sealers.js';
import { TestClock } from '../support/clock.js';
import { fakeKms } from '../support/fake-kms.js';
import { ask, expectSound, fleetInstance } from '../support/fleet.js';
import { useSimulatorAndTable } from '../support/simulator-and-table.js';
import { quietLogger } from '../support/vend-harness.js';

const shared = useSimulatorAndTable();
const kms = mockClient(KMSClient);
/** The KMS key: the same across resets, so KMS decrypts again what it encrypted before an outage. */
const KEY = new AesGcmSealer();
const kmsAnswers = () => {
  kms.reset();
  fakeKms(kms, KEY);
};

beforeEach(kmsAnswers);
afterAll(() => kms.restore());

/** What KMS answers once the account's shared quota for cryptographic operations is spent. */
const throttled = () =>
  new KMSServiceException({
    name: 'ThrottlingException',
    $fault: 'client',
    message: 'You have exceeded the rate at which you may call KMS.',
    $metadata: { httpStatusCode: 400 },
  });

const sealer = () => new KmsSealer(new KMSClient({ region: 'us-east-1' }), 'alias/token-vending');

it('a throttled KMS Decrypt leaves the shared token in place: instances serve degraded, then the shared token again', async () => {
  // Regression: an unseal that failed because KMS throttled counted as "cannot
  // be unsealed", so each instance minted and stored over a good token in turn,
  // and every extra Encrypt spent the quota that was already short.
  // Prepare: three instances; the token cached in the table
  const clock = new TestClock({ virtualSleep: true });
  const store = new DynamoDbTokenStore(shared.client, shared.table);
  const logger = quietLogger();
  const warn = vi.spyOn(logger, 'warn');
  const fleet = Array.from({ length: 3 }, () =>
    fleetInstance({ sim: shared.sim, store, clock, sealer: sealer(), logger }),
  );
  const cached = await ask(fleet[0]!, 'ba_demo_1');
  const mintsBefore = shared.sim.stats.tokenRequests;

  // Act: KMS throttles Decrypt (Encrypt still answers) once every L1 entry has aged out
  kms.on(DecryptCommand).rejects(throttled());
  clock.advance(61);
  const during = await Promise.all(fleet.map((instance) => ask(instance, 'ba_demo_1')));
  const mintsDuring = shared.sim.stats.tokenRequests - mintsBefore;
  kmsAnswers();
  clock.advance(61);
  const after = [];
  for (const instance of fleet) after.push(await ask(instance, 'ba_demo_1'));

  // Assess
  for (const answer of during) {
    expect(answer.status).toBe(200);
    expectSound(answer, { scope: 'ba_demo_1', nowMs: clock.now() });
  }
  expect(mintsDuring).toBeLessThanOrEqual(fleet.length);
  // Operators see KMS named as the cause, never a token.
  expect(warn).toHaveBeenCalledWith(
    'token store unavailable; serving degraded',
    expect.objectContaining({
      operation: 'kms',
      error: expect.objectContaining({ name: 'SealerUnavailableError' }),
    }),
  );
  expect(JSON.stringify(warn.mock.calls)).not.toContain(String(cached.body.access_token));
  for (const answer of after) expect(answer.body.access_token).toBe(cached.body.access_token);
  expect(shared.sim.stats.tokenRequests - mintsBefore).toBe(mintsDuring);
});

it('KMS failing at a cold stampede: every caller is served degraded, and nobody takes the lease over in turn', async () => {
  // Regression: the holder whose new token could not be sealed freed the lease
  // and recorded nothing, so a waiter took it over, minted, failed to seal in
  // turn, and so on: each link cost KMS's timeout (2 s in AWS), and the later
  // waiters ran out of their 13 s and answered 503.
  // Prepare: eight cold instances on real time; every KMS call fails after a while
  const clock = new TestClock();
  const store = new DynamoDbTokenStore(shared.client, shared.table);
  const logger = quietLogger();
  const warn = vi.spyOn(logger, 'warn');
  const fleet = Array.from({ length: 8 }, () =>
    fleetInstance({ sim: shared.sim, store, clock, sealer: sealer(), logger }),
  );
  const failing = async () => {
    await clock.sleep(50);
    throw new KMSServiceException({
      name: 'KMSInternalException',
      $fault: 'server',
      message: 'internal error',
      $metadata: { httpStatusCode: 500 },
    });
  };
  kms.reset();
  kms.on(EncryptCommand).callsFake(failing);
  kms.on(DecryptCommand).callsFake(failing);

  // Act: two callers on each instance ask for a scope nobody has minted
  const answers = await Promise.all(
    fleet.flatMap((instance) => [ask(instance, 'ba_demo_2'), ask(instance, 'ba_demo_2')]),
  );

  // Assess: every caller served; at most one mint per instance, as without
  // DynamoDB; the lease tried by one holder only
  for (const answer of answers) {
    expect(answer.status).toBe(200);
    expectSound(answer, { scope: 'ba_demo_2', nowMs: clock.now() });
  }
  expect(shared.sim.stats.tokenRequests).toBeLessThanOrEqual(fleet.length);
  expect(warn).not.toHaveBeenCalledWith('took over an expired lease', expect.anything());
});

it('records a failed seal where the release before this one does not look, so a canary can run both', async () => {
  // Regression (review): the failure went in failed_code, which the previous
  // release reads, and it answers a code it does not know as a provider
  // outage (503) for 5 s, where this release serves degraded.
  // Prepare: one instance; KMS refuses every Encrypt
  const clock = new TestClock({ virtualSleep: true });
  const store = new DynamoDbTokenStore(shared.client, shared.table);
  const instance = fleetInstance({ sim: shared.sim, store, clock, sealer: sealer() });
  kms.on(EncryptCommand).rejects(throttled());

  // Act
  const answer = await ask(instance, 'ba_demo_2');
  const raw = await shared.client.send(
    new GetItemCommand({ TableName: shared.table, Key: { pk: { S: 'TOKEN#ba_demo_2' } } }),
  );

  // Assess: served; the item names the failure only in sealer_failed_at, and this release reads it
  expect(answer.status).toBe(200);
  expect(raw.Item).not.toHaveProperty('failed_code');
  expect(raw.Item).not.toHaveProperty('failed_at');
  expect(Number(raw.Item?.sealer_failed_at?.N)).toBeGreaterThan(0);
  expect((await store.get('TOKEN#ba_demo_2'))?.failure?.code).toBe('sealer_unavailable');
});
