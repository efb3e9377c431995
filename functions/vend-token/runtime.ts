import { randomUUID } from 'node:crypto';
import { type Clock, systemClock } from '../core/clock.js';
import type { PolicyProvider } from '../core/policy-source.js';
import type { CredentialsSource, Sealer, TokenStore } from '../core/ports.js';
import { type ProviderClientConfig, requestToken } from '../core/provider-client.js';
import {
  type CoreLogger,
  type CoreMetric,
  TokenService,
  type TokenServiceConfig,
} from '../core/token-service.js';
import { createVendApp, type VendApp } from './app.js';

export interface VendRuntimeOptions {
  readonly store: TokenStore;
  readonly sealer: Sealer;
  readonly credentials: CredentialsSource;
  readonly provider: ProviderClientConfig;
  readonly policy: PolicyProvider;
  readonly logger: CoreLogger;
  readonly clock?: Clock;
  readonly fetch?: typeof fetch;
  readonly random?: () => number;
  readonly tokenConfig?: TokenServiceConfig;
  readonly instanceId?: string;
  readonly count?: (metric: CoreMetric) => void;
  readonly recordVend?: (outcome: string, latencyMs: number) => void;
}

export interface VendRuntime {
  readonly app: VendApp;
  readonly tokens: TokenService;
}

/**
 * Wires one "Lambda instance": the token service and the vend app over the
 * given store, sealer, credentials and provider. The Lambda handler, the local
 * stack, the tests and the bench all build instances through this.
 */
export function createVendRuntime(options: VendRuntimeOptions): VendRuntime {
  const clock = options.clock ?? systemClock;
  const random = options.random ?? Math.random;
  const fetchImpl = options.fetch ?? globalThis.fetch;
  const tokens = new TokenService(
    {
      store: options.store,
      sealer: options.sealer,
      credentials: options.credentials,
      mint: (credentials, scope, deadlineMs) =>
        requestToken(
          { fetch: fetchImpl, clock, random },
          options.provider,
          credentials,
          scope,
          deadlineMs,
        ),
      clock,
      random,
      logger: options.logger,
      instanceId: options.instanceId ?? randomUUID(),
      ...(options.count ? { count: options.count } : {}),
    },
    options.tokenConfig,
  );
  const app = createVendApp({
    tokens,
    policy: options.policy,
    logger: options.logger,
    clock,
    ...(options.recordVend ? { recordVend: options.recordVend } : {}),
  });
  return { app, tokens };
}
