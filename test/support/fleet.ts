/**
 * A fleet of simulated vend instances for the fault matrix (test/resilience):
 * each instance its own L1, credentials cache and (optionally skewed) clock,
 * all sharing one store and the provider simulator; short provider timeouts so
 * a hang costs milliseconds; and the invariants every answer must keep.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import type { Logger } from '@aws-lambda-powertools/logger';
import { expect } from 'vitest';
import type { Clock } from '../../functions/core/clock.js';
import { fixedPolicy } from '../../functions/core/policy-source.js';
import type { CredentialsSource, Sealer, TokenStore } from '../../functions/core/ports.js';
import type { TokenServiceConfig } from '../../functions/core/token-service.js';
import { createVendRuntime, type VendRuntime } from '../../functions/vend-token/runtime.js';
import type { ProviderSimulator } from '../../local/provider-simulator.js';
import type { TestClock } from './clock.js';
import {
  demoCredentials,
  quietLogger,
  SHARED_SEALER,
  TEST_POLICY,
  urlEvent,
  type Vended,
  vend,
} from './vend-harness.js';

/** Per attempt: a hung provider costs 3 x 100 ms of real time, not 3 x 3 s. */
export const PROVIDER_TIMEOUT_MS = 100;

/** An instance's own clock: the shared test clock plus a fixed skew. */
export class SkewedClock implements Clock {
  readonly #base: TestClock;
  readonly #skewMs: number;
  constructor(base: TestClock, skewMs: number) {
    this.#base = base;
    this.#skewMs = skewMs;
  }
  now(): number {
    return this.#base.now() + this.#skewMs;
  }
  sleep(ms: number): Promise<void> {
    return this.#base.sleep(ms);
  }
}

export interface FleetInstanceOptions {
  readonly sim: ProviderSimulator;
  readonly store: TokenStore;
  readonly clock: Clock;
  readonly credentials?: CredentialsSource;
  readonly tokenConfig?: TokenServiceConfig;
  readonly instanceId?: string;
  /** Default: the shared AES-GCM sealer. */
  readonly sealer?: Sealer;
  /** Default: a silent one. */
  readonly logger?: Logger;
}

/** One simulated Lambda instance with short provider timeouts. */
export function fleetInstance(options: FleetInstanceOptions): VendRuntime {
  return createVendRuntime({
    store: options.store,
    sealer: options.sealer ?? SHARED_SEALER,
    credentials: options.credentials ?? demoCredentials(),
    provider: {
      baseUrl: options.sim.url,
      unscopedScopeMode: 'omit',
      timeoutMs: PROVIDER_TIMEOUT_MS,
      backoffBaseMs: 5,
    },
    policy: fixedPolicy(TEST_POLICY),
    logger: options.logger ?? quietLogger(),
    clock: options.clock,
    tokenConfig: options.tokenConfig ?? {},
    ...(options.instanceId ? { instanceId: options.instanceId } : {}),
  });
}

export const ask = (runtime: VendRuntime, scope: string, minTtl = 300): Promise<Vended> =>
  vend(runtime, urlEvent({ query: `min_ttl=${minTtl}&scope=${scope}` }));

/** Every status and code the vend API documents (docs/vend-api.md). */
const DOCUMENTED = new Set([
  '400 invalid_request',
  '401 unauthenticated',
  '403 access_denied',
  '404 not_found',
  '405 method_not_allowed',
  '502 upstream_credentials_rejected',
  '502 upstream_error',
  '503 upstream_unavailable',
  '500 internal_error',
]);

/**
 * The invariants of every answer under a fault: a 200 carries a token of the
 * asked scope that is unexpired by the true clock (`nowMs`), has more than
 * `minTtl - slack` seconds left and is none of `forbidden`; any other answer is
 * a documented problem, never a 500, and a 503 says when to come back.
 */
export function expectSound(
  answer: Vended,
  expected: {
    scope: string;
    nowMs: number;
    minTtl?: number;
    slackSeconds?: number;
    forbidden?: ReadonlySet<unknown>;
  },
): void {
  const now = Math.floor(expected.nowMs / 1000);
  if (answer.status === 200) {
    expect(answer.body.scope).toBe(expected.scope);
    expect(answer.body.expires_at as number).toBeGreaterThan(now);
    expect((answer.body.expires_at as number) - now).toBeGreaterThan(
      (expected.minTtl ?? 300) - (expected.slackSeconds ?? 0),
    );
    expect(expected.forbidden?.has(answer.body.access_token) ?? false).toBe(false);
    return;
  }
  expect(DOCUMENTED).toContain(`${answer.status} ${String(answer.body.code)}`);
  expect(answer.status).not.toBe(500);
  if (answer.status === 503) expect(answer.headers['retry-after']).toMatch(/^\d+$/);
}

/** A TCP proxy in front of DynamoDB Local that can go away and come back on the same port. */
export interface TcpProxy {
  readonly endpoint: string;
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let listenPort = 0;
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const next = createServer((client) => {
        const upstream = createConnection({ host: hostname, port: Number(port) });
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('close', () => sockets.delete(socket));
          socket.on('error', () => {
            client.destroy();
            upstream.destroy();
          });
        }
        client.pipe(upstream).pipe(client);
      });
      next.once('error', reject);
      next.listen(listenPort, '127.0.0.1', () => {
        listenPort = (next.address() as { port: number }).port;
        server = next;
        resolve();
      });
    });
  const down = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      if (!server) return resolve();
      server.close(() => resolve());
      server = undefined;
    });
  await listen();
  return {
    endpoint: `http://127.0.0.1:${listenPort}`,
    down,
    up: listen,
    close: down,
  };
}
