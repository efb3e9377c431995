/**
 * The key-issuing job against real parts: DynamoDB Local for the job records
 * and the token cache, the provider simulator over loopback HTTP, and the real
 * client library signing requests to an in-process vend runtime behind the
 * local SigV4-checking Function URL. Secrets Manager is a stateful fake behind
 * aws-sdk-client-mock (it has no local emulator); sealing is AES-GCM.
 */
import { type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import {
  CreateSecretCommand,
  DescribeSecretCommand,
  InternalServiceError,
  InvalidRequestException,
  PutSecretValueCommand,
  ResourceExistsException,
  ResourceNotFoundException,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { type AwsClientStub, mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach } from 'vitest';
import { TokenVendingClient } from '../../client/index.js';
import { DynamoDbKeyJobStore } from '../../functions/adapters/dynamodb-key-job-store.js';
import { AesGcmSealer } from '../../functions/adapters/sealers.js';
import { SecretsManagerKeyVault } from '../../functions/adapters/secrets-manager-key-vault.js';
import type { CoreLogger } from '../../functions/core/token-service-types.js';
import {
  createKeyIssuingJob,
  type KeyIssuingJob,
  type KeyIssuingJobConfig,
  type KeyIssuingJobDeps,
} from '../../functions/issue-keys/job.js';
import type { KeyJobMetric } from '../../functions/issue-keys/ports.js';
import type { VendRuntime } from '../../functions/vend-token/runtime.js';
import { type LocalFunctionUrl, startLocalFunctionUrl } from '../../local/function-url.js';
import type { LocalIdentity } from '../../local/local-identities.js';
import { type ProviderSimulator, startProviderSimulator } from '../../local/provider-simulator.js';
import { TestClock } from './clock.js';
import { createTestTable, dynamoClient } from './dynamodb.js';
import { makeInstance, PARTNER_ARN } from './vend-harness.js';

/** The job's identity: TEST_POLICY grants its role (key-issuer) the unscoped token. */
export const KEY_ISSUER: LocalIdentity = Object.freeze({
  accessKeyId: 'AKIAKEYISSUER0000001',
  secretAccessKey: 'localKeyIssuerSecretAccessKey00000000000',
  arn: PARTNER_ARN,
});

/** An identity the local URL knows but the access policy grants nothing. */
export const UNGRANTED: LocalIdentity = Object.freeze({
  accessKeyId: 'AKIAUNGRANTED0000001',
  secretAccessKey: 'localUngrantedSecretAccessKey00000000000',
  arn: 'arn:aws:sts::111122223333:assumed-role/nobody/job',
});

/** One request the job sent to the provider, as seen by its fetch. */
export interface SentRequest {
  readonly url: string;
  readonly method: string;
  readonly headers: Record<string, string>;
  readonly body?: string;
  readonly redirect?: RequestInit['redirect'];
}

/** Everything the job wrote to its logger, one JSON line per call. */
export interface CapturingLogger extends CoreLogger {
  readonly lines: string[];
  entries(): Array<{ level: string; message: string; extra: Record<string, unknown> }>;
}

export function capturingLogger(): CapturingLogger {
  const lines: string[] = [];
  const at =
    (level: string) =>
    (message: unknown, ...extra: unknown[]): void => {
      lines.push(JSON.stringify({ level, message, extra: Object.assign({}, ...extra) }));
    };
  return {
    lines,
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    entries: () => lines.map((line) => JSON.parse(line)),
  } as CapturingLogger;
}

/**
 * A stateful Secrets Manager: CreateSecret fails with ResourceExistsException
 * when the name exists; a version is keyed by its ClientRequestToken, and a put
 * with a known token and the same value does nothing, as the service does.
 */
export class FakeSecretsManager {
  readonly secrets = new Map<string, { current: string; versions: Map<string, string> }>();
  /** Calls left to fail with InternalServiceError. */
  failures = 0;
  /** DescribeSecret calls left to fail with InternalServiceError. */
  describeFailures = 0;
  /** Secrets scheduled for deletion: described with a DeletedDate, refusing new versions. */
  readonly deleting = new Set<string>();

  constructor(sm: AwsClientStub<SecretsManagerClient>) {
    const failing = () => {
      if (this.failures <= 0) return;
      this.failures -= 1;
      throw new InternalServiceError({ message: 'injected failure', $metadata: {} });
    };
    sm.on(CreateSecretCommand).callsFake((input) => {
      failing();
      const name = input.Name as string;
      this.refuseIfDeleting(name);
      if (this.secrets.has(name)) {
        throw new ResourceExistsException({ message: 'the secret exists', $metadata: {} });
      }
      const token = input.ClientRequestToken as string;
      this.secrets.set(name, {
        current: token,
        versions: new Map([[token, input.SecretString as string]]),
      });
      return { Name: name, VersionId: token };
    });
    sm.on(DescribeSecretCommand).callsFake((input) => {
      if (this.describeFailures > 0) {
        this.describeFailures -= 1;
        throw new InternalServiceError({ message: 'injected failure', $metadata: {} });
      }
      const name = input.SecretId as string;
      const secret = this.secrets.get(name);
      if (!secret) {
        throw new ResourceNotFoundException({ message: 'no such secret', $metadata: {} });
      }
      return {
        Name: name,
        VersionIdsToStages: { [secret.current]: ['AWSCURRENT'] },
        ...(this.deleting.has(name) ? { DeletedDate: new Date() } : {}),
      };
    });
    sm.on(PutSecretValueCommand).callsFake((input) => {
      failing();
      const name = input.SecretId as string;
      this.refuseIfDeleting(name);
      const secret = this.secrets.get(name);
      if (!secret) throw new Error(`no secret ${name}`);
      const token = input.ClientRequestToken as string;
      const known = secret.versions.get(token);
      if (known !== undefined && known !== input.SecretString) {
        throw new ResourceExistsException({ message: 'version exists', $metadata: {} });
      }
      secret.versions.set(token, input.SecretString as string);
      secret.current = token;
      return { Name: name, VersionId: token };
    });
  }

  /** As Secrets Manager answers CreateSecret and PutSecretValue for a secret scheduled for deletion. */
  private refuseIfDeleting(name: string): void {
    if (this.deleting.has(name)) {
      throw new InvalidRequestException({
        message:
          "You can't perform this operation on the secret because it was marked for deletion.",
        $metadata: {},
      });
    }
  }

  /** The current value of a secret. */
  value(name: string): string | undefined {
    const secret = this.secrets.get(name);
    return secret ? secret.versions.get(secret.current) : undefined;
  }
}

export interface KeyJobHarness {
  readonly clock: TestClock;
  readonly sim: ProviderSimulator;
  readonly ddb: DynamoDBClient;
  readonly table: string;
  readonly vend: VendRuntime;
  readonly url: LocalFunctionUrl;
  readonly store: DynamoDbKeyJobStore;
  readonly sealer: AesGcmSealer;
  /** Requests the job sent to the provider. */
  readonly sent: SentRequest[];
  /** The keys endpoint's answers as received, in order; `replayed`: an Idempotency-Key replay. */
  readonly answers: Array<{ status: number; body: string; replayed: boolean }>;
  /** The job's fetch: records, then calls the real fetch (or `gate`, when set). */
  fetch: typeof fetch;
  /** Runs before each request is passed on; tests use it to hold a request. */
  gate?: (request: SentRequest) => Promise<void>;
  /** A token client signing as `identity` (default KEY_ISSUER). */
  tokens(identity?: LocalIdentity): TokenVendingClient;
  job(
    overrides?: Partial<KeyIssuingJobDeps>,
    config?: Partial<KeyIssuingJobConfig>,
  ): KeyIssuingJob & { logger: CapturingLogger; metrics: KeyJobMetric[] };
  close(): Promise<void>;
}

/** Starts the simulator, a fresh table, the vend runtime and its local URL. */
export async function startKeyJobHarness(
  vault: KeyIssuingJobDeps['vault'] | (() => KeyIssuingJobDeps['vault']),
): Promise<KeyJobHarness> {
  // Frozen but for advances and sleeps: whole-second assertions never straddle a real second.
  const clock = new TestClock({ virtualSleep: true, frozenAt: Date.now() });
  const sim = await startProviderSimulator({ now: () => clock.now() });
  const ddb = dynamoClient();
  const table = await createTestTable(ddb);
  const vend = makeInstance({ sim, clock, client: ddb, table });
  const url = await startLocalFunctionUrl({
    handler: vend.app,
    identities: [KEY_ISSUER, UNGRANTED],
  });
  const sealer = new AesGcmSealer();
  const store = new DynamoDbKeyJobStore(ddb, table);
  const sent: SentRequest[] = [];
  const answers: KeyJobHarness['answers'] = [];
  const harness: KeyJobHarness = {
    clock,
    sim,
    ddb,
    table,
    vend,
    url,
    store,
    sealer,
    sent,
    answers,
    fetch: async (input, init) => {
      const headers = Object.fromEntries(new Headers(init?.headers).entries());
      const request: SentRequest = {
        url: String(input),
        method: init?.method ?? 'GET',
        headers,
        ...(typeof init?.body === 'string' ? { body: init.body } : {}),
        ...(init?.redirect ? { redirect: init.redirect } : {}),
      };
      sent.push(request);
      await harness.gate?.(request);
      const response = await fetch(input, init);
      if (request.url.endsWith('/keys')) {
        answers.push({
          status: response.status,
          body: await response.clone().text(),
          replayed: response.headers.get('idempotent-replayed') === 'true',
        });
      }
      return response;
    },
    tokens: (identity = KEY_ISSUER) =>
      new TokenVendingClient({ url: url.url, credentials: identity, clock }),
    job: (overrides = {}, config = {}) => {
      const logger = capturingLogger();
      const metrics: KeyJobMetric[] = [];
      const job = createKeyIssuingJob(
        {
          store,
          vault: typeof vault === 'function' ? vault() : vault,
          sealer,
          tokens: harness.tokens(),
          logger,
          clock,
          fetch: harness.fetch,
          count: (metric) => metrics.push(metric),
          ...overrides,
        },
        {
          providerBaseUrl: sim.url,
          businessApplicationIds: ['ba_demo_1'],
          timeoutMs: 2000,
          ...config,
        },
      );
      return Object.assign(job, { logger, metrics });
    },
    close: async () => {
      await url.close();
      await sim.close();
      ddb.destroy();
    },
  };
  return harness;
}

/**
 * Per test: a harness whose vault is Secrets Manager under `prefix`, its API
 * answered by a stateful FakeSecretsManager over aws-sdk-client-mock.
 */
export function useSecretsManagerKeyJobs(prefix: string): {
  readonly h: KeyJobHarness;
  readonly secrets: FakeSecretsManager;
  readonly sm: AwsClientStub<SecretsManagerClient>;
} {
  const sm = mockClient(SecretsManagerClient);
  const client = new SecretsManagerClient({
    region: 'us-east-1',
    credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
  });
  const world = { sm } as { h: KeyJobHarness; secrets: FakeSecretsManager; sm: typeof sm };
  beforeEach(async () => {
    sm.reset();
    world.secrets = new FakeSecretsManager(sm);
    world.h = await startKeyJobHarness(() => new SecretsManagerKeyVault({ client, prefix }));
  });
  afterEach(async () => world.h.close());
  return world;
}

/** The raw job record of `id` (empty when there is none), read consistently. */
export async function keyJobRecord(h: KeyJobHarness, id: string) {
  const out = await h.ddb.send(
    new GetItemCommand({
      TableName: h.table,
      Key: { pk: { S: `KEYS#${id}` } },
      ConsistentRead: true,
    }),
  );
  return out.Item ?? {};
}
