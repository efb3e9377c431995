/**
 * What every bench workload runs against: DynamoDB Local (its own, unless
 * DYNAMODB_ENDPOINT is set), the provider simulator on loopback, a clock the
 * workloads move, and DynamoDB clients that count the calls they send.
 */
import { Console } from 'node:console';
import { randomUUID } from 'node:crypto';
import { Agent } from 'node:http';
import { Writable } from 'node:stream';
import { Logger } from '@aws-lambda-powertools/logger';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { boundedCalls } from '../functions/adapters/aws-client-options.js';
import { AccessPolicy } from '../functions/core/access-policy.js';
import { type DynamoDbLocal, startDynamoDbLocal } from '../local/dynamodb-local.js';
import { type ProviderSimulator, startProviderSimulator } from '../local/provider-simulator.js';
import { ensureTable, LOCAL_AWS_CREDENTIALS } from '../local/table.js';

/** The 20 scopes of the bench's access policy (and of the simulator). */
export const SCOPES: readonly string[] = Array.from(
  { length: 20 },
  (_, i) => `ba_bench_${String(i + 1).padStart(2, '0')}`,
);

/** The caller every bench vend is made as; the policy grants it every scope. */
export const CALLER_ARN = 'arn:aws:sts::111122223333:assumed-role/checkout/bench';

export const POLICY_JSON = JSON.stringify({
  scopes: SCOPES,
  grants: [{ principal: 'arn:aws:iam::111122223333:role/checkout', scopes: ['*'] }],
});

export const POLICY = AccessPolicy.parse(POLICY_JSON);

/** A DynamoDB client whose every command is counted, by command name. */
export interface CountingClient {
  readonly client: DynamoDBClient;
  readonly counts: Map<string, number>;
  total(): number;
}

const BENCH_CALLS = boundedCalls({
  requestTimeoutMs: 5000,
  connectionTimeoutMs: 5000,
  maxAttempts: 2,
});

/**
 * A counting client on the world's sockets. It is never destroyed (that would
 * close the shared sockets); the world closes them.
 */
export function countingClient(world: Pick<World, 'endpoint' | 'sockets'>): CountingClient {
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: world.endpoint,
    credentials: LOCAL_AWS_CREDENTIALS,
    // As the functions configure it (aws-runtime.ts), but with longer timeouts:
    // DynamoDB Local, sharing two cores with the bench, is slower than DynamoDB to answer.
    maxAttempts: BENCH_CALLS.maxAttempts,
    requestHandler: { ...BENCH_CALLS.requestHandler, httpAgent: world.sockets },
  });
  const counts = new Map<string, number>();
  client.middlewareStack.add(
    (next, context) => (args) => {
      const name = context.commandName ?? 'unknown';
      counts.set(name, (counts.get(name) ?? 0) + 1);
      return next(args);
    },
    { step: 'initialize', name: 'benchCallCounter' },
  );
  return {
    client,
    counts,
    total: () => [...counts.values()].reduce((sum, n) => sum + n, 0),
  };
}

/**
 * A Powertools logger at INFO, formatting every line as in production and
 * writing it nowhere, so logging costs what it costs in Lambda without
 * flooding the bench's own output.
 */
export function discardingLogger(): Logger {
  const logger = new Logger({ serviceName: 'bench', logLevel: 'INFO' });
  const sink = new Writable({ write: (_chunk, _encoding, done) => done() });
  Object.assign(logger as unknown as { console: Console }, {
    console: new Console({ stdout: sink, stderr: sink }),
  });
  return logger;
}

export interface World {
  readonly endpoint: string;
  /**
   * The keep-alive sockets every bench DynamoDB client shares, opened once and
   * kept across runs, as the provider's are (fetch's global pool). A run's
   * fresh clients would otherwise open up to 100 connections at once, and
   * DynamoDB Local's accept queue drops some: their SYN is resent after 1 s,
   * a loopback artefact that DynamoDB, with one connection per instance,
   * does not have. The simulated instances share them, so there are more
   * than one instance's 50.
   */
  readonly sockets: Agent;
  readonly sim: ProviderSimulator;
  /** A fresh table (no TTL, so the emulator never sweeps items under simulated time). */
  newTable(): Promise<string>;
  close(): Promise<void>;
}

export async function startWorld(): Promise<World> {
  const local: DynamoDbLocal | undefined = process.env.DYNAMODB_ENDPOINT
    ? undefined
    : await startDynamoDbLocal();
  const endpoint = process.env.DYNAMODB_ENDPOINT ?? (local as DynamoDbLocal).endpoint;
  const admin = new DynamoDBClient({
    region: 'us-east-1',
    endpoint,
    credentials: LOCAL_AWS_CREDENTIALS,
  });
  const sim = await startProviderSimulator({ allowedScopes: [...SCOPES] });
  const sockets = new Agent({ keepAlive: true, maxSockets: 200 });
  return {
    endpoint,
    sockets,
    sim,
    newTable: async () => {
      const name = `bench-${randomUUID()}`;
      await ensureTable(admin, name, { ttl: false });
      return name;
    },
    close: async () => {
      admin.destroy();
      sockets.destroy();
      await sim.close();
      await local?.stop();
    },
  };
}
