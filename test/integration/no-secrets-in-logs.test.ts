import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DynamoDbTokenStore } from '../../functions/adapters/dynamodb-token-store.js';
import { metricsRecorder } from '../../functions/adapters/metrics.js';
import { AesGcmSealer } from '../../functions/adapters/sealers.js';
import { fingerprint } from '../../functions/core/fingerprint.js';
import { fixedPolicy } from '../../functions/core/policy-source.js';
import { createVendRuntime } from '../../functions/vend-token/runtime.js';
import {
  DEMO_PROVIDER_CREDENTIALS,
  type ProviderSimulator,
  startProviderSimulator,
} from '../../local/provider-simulator.js';
import { captureOutput } from '../support/capture-output.js';
import { TestClock } from '../support/clock.js';
import { createTestTable, dynamoClient } from '../support/dynamodb.js';
import {
  demoCredentials,
  PARTNER_ARN,
  SHARED_SEALER,
  STRANGER_ARN,
  TEST_POLICY,
  urlEvent,
  vend,
} from '../support/vend-harness.js';

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

it('no token, secret or Basic credential reaches the logs or metrics of a busy run', async () => {
  // Prepare: capture everything written to stdout and stderr
  const captured = captureOutput();
  const table = await createTestTable(client);
  const clock = new TestClock({ virtualSleep: true });
  const instance = (
    overrides: {
      client?: DynamoDBClient;
      sealer?: AesGcmSealer;
      credentials?: ReturnType<typeof demoCredentials>;
    } = {},
  ) => {
    const logger = new Logger({ serviceName: 'leak-test', logLevel: 'DEBUG' });
    const recorder = metricsRecorder(
      new Metrics({ namespace: 'LeakTest', serviceName: 'leak-test' }),
    );
    return createVendRuntime({
      store: new DynamoDbTokenStore(overrides.client ?? client, table),
      sealer: overrides.sealer ?? SHARED_SEALER,
      credentials: overrides.credentials ?? demoCredentials(),
      provider: { baseUrl: sim.url, unscopedScopeMode: 'omit', backoffBaseMs: 1 },
      policy: fixedPolicy(TEST_POLICY),
      logger,
      clock,
      count: recorder.count,
      recordVend: recorder.recordVend,
    });
  };
  const dead = new DynamoDBClient({
    endpoint: 'http://127.0.0.1:9',
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
    maxAttempts: 1,
  });
  const tokens: string[] = [];
  const keep = (r: { body: Record<string, unknown> }) => {
    if (typeof r.body.access_token === 'string') tokens.push(r.body.access_token);
  };

  // Act: successes on every tier, and every kind of failure
  try {
    for (let i = 0; i < 20; i++)
      keep(await vend(instance(), urlEvent({ query: 'scope=ba_demo_1' })));
    keep(await vend(instance(), urlEvent({ arn: PARTNER_ARN })));
    keep(
      await vend(instance({ sealer: new AesGcmSealer() }), urlEvent({ query: 'scope=ba_demo_1' })),
    );
    keep(await vend(instance({ client: dead }), urlEvent({ query: 'scope=ba_demo_2' })));
    await vend(instance(), urlEvent({ query: 'scope=ba_demo_1', arn: STRANGER_ARN }));
    await vend(instance(), urlEvent({ query: 'scope=%00bad' }));
    for (const fault of [
      { kind: 'wrongScope' },
      { kind: 'malformed' },
      { kind: 'wrongTokenType' },
    ] as const) {
      sim.injectTokenFault(fault);
      await vend(instance(), urlEvent({ query: 'scope=ba_demo_2&min_ttl=3600' }));
    }
    sim.injectTokenFault({ kind: 'status', status: 503 }, 3);
    await vend(instance(), urlEvent({ query: 'scope=ba_demo_2' }));
    sim.setCredentials({ key: 'rotated', secret: 'rotated-secret' });
    clock.advance(10);
    await vend(instance(), urlEvent({ query: 'scope=ba_demo_2' }));
    await vend(
      instance({ credentials: demoCredentials('broken') }),
      urlEvent({ query: 'scope=ba_demo_1', arn: null }),
    );
  } finally {
    captured.restore();
    dead.destroy();
  }

  // Assess
  const logs = captured.text();
  expect(tokens.length).toBeGreaterThanOrEqual(4);
  expect(logs).toContain('"tokenFingerprint"');
  expect(logs).toContain(fingerprint(tokens[0] as string));
  expect(logs).toContain('"Vends"');
  const basic = Buffer.from(
    `${DEMO_PROVIDER_CREDENTIALS.key}:${DEMO_PROVIDER_CREDENTIALS.secret}`,
  ).toString('base64');
  for (const secret of [
    ...new Set(tokens),
    DEMO_PROVIDER_CREDENTIALS.secret,
    basic,
    'rotated-secret',
  ]) {
    expect(logs).not.toContain(secret);
  }
});
