/**
 * Key material (anything in the keys endpoint's answers) never reaches the
 * logs, the metrics, the results, the errors or the job records (but for the
 * sealed recovery copy, which is ciphertext). Every output is captured: the
 * real Powertools Logger and Metrics writing to stdout, every result and error,
 * and every item of the table.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SecretsManagerKeyVault } from '../../functions/adapters/secrets-manager-key-vault.js';
import { captureOutput } from '../support/capture-output.js';
import {
  FakeSecretsManager,
  type KeyJobHarness,
  startKeyJobHarness,
} from '../support/key-job-harness.js';

const sm = mockClient(SecretsManagerClient);
let h: KeyJobHarness;
beforeAll(async () => {
  h = await startKeyJobHarness(
    () =>
      new SecretsManagerKeyVault({
        client: new SecretsManagerClient({
          region: 'us-east-1',
          credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
        }),
        prefix: 'tvm-test',
      }),
  );
});
afterAll(async () => h.close());

it('no issued key or secret, nor the bearer token, appears in any output of a busy run', async () => {
  // Prepare: capture stdout and stderr, where Powertools writes logs and EMF metrics
  const captured = captureOutput();
  const secrets = new FakeSecretsManager(sm);
  const outputs: unknown[] = [];
  const job = () => {
    const logger = new Logger({ serviceName: 'leak-test', logLevel: 'DEBUG' });
    const metrics = new Metrics({ namespace: 'LeakTest', serviceName: 'issue-keys' });
    const built = h.job(
      { logger, count: (m) => metrics.addMetric(m, MetricUnit.Count, 1) },
      { businessApplicationIds: ['ba_demo_1', 'ba_demo_2'] },
    );
    return {
      handle: async (event: unknown) => {
        try {
          outputs.push(await built.handle(event));
        } catch (error) {
          outputs.push(error);
        } finally {
          metrics.publishStoredMetrics();
        }
      },
    };
  };

  // Act
  try {
    secrets.failures = 1; // ba_demo_1's store fails: sealed copy kept
    h.sim.injectKeysFault({ kind: 'status', status: 500 });
    await job().handle({});
    await job().handle({}); // stores the sealed copy
    h.sim.injectKeysFault({ kind: 'dropAfterCommit' });
    await job().handle({ businessApplicationIds: ['ba_demo_1'], force: true });
    h.sim.setOptions({ keyIssuingEnabled: false });
    await job().handle({ businessApplicationIds: ['ba_demo_2'], force: true });
  } finally {
    captured.restore();
  }
  const scan = await h.ddb.send(new ScanCommand({ TableName: h.table, ConsistentRead: true }));

  // Assess: every key, secret and bearer token the run saw
  const material = h.answers
    .filter((a) => a.status >= 200 && a.status < 300)
    .flatMap((a) => {
      const body = JSON.parse(a.body) as { key: string; secret: string };
      return [body.key, body.secret, a.body];
    });
  const bearers = h.sent.map((r) => r.headers.authorization?.replace(/^Bearer /, '') ?? '');
  expect(material.length).toBeGreaterThanOrEqual(9);
  expect(captured.text().length).toBeGreaterThan(0);
  const items = scan.Items ?? [];
  expect(items.some((i) => i.pk?.S === 'KEYS#ba_demo_1')).toBe(true);
  const texts = [
    captured.text(),
    JSON.stringify(outputs),
    outputs.map((o) => (o instanceof Error ? `${o.message}\n${o.stack}` : '')).join('\n'),
    JSON.stringify(items, (_, value) =>
      value instanceof Uint8Array ? Buffer.from(value).toString('latin1') : value,
    ),
  ];
  for (const text of texts) {
    for (const secret of [...material, ...bearers]) {
      expect(secret.length).toBeGreaterThan(10);
      expect(text).not.toContain(secret);
    }
    expect(text).not.toMatch(/bak_|bas_|sim_/);
  }
  expect(outputs.some((o) => o instanceof Error)).toBe(true);
  expect(captured.text()).toContain('KeysIssued');
});
