import { randomBytes } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { LambdaFunctionURLEvent, LambdaFunctionURLResult } from 'aws-lambda';
import { StaticCredentials } from '../../functions/adapters/credentials.js';
import { DynamoDbTokenStore } from '../../functions/adapters/dynamodb-token-store.js';
import { AesGcmSealer } from '../../functions/adapters/sealers.js';
import { AccessPolicy } from '../../functions/core/access-policy.js';
import type { Clock } from '../../functions/core/clock.js';
import { fixedPolicy, type PolicyProvider } from '../../functions/core/policy-source.js';
import type { CredentialsSource, Sealer, TokenStore } from '../../functions/core/ports.js';
import type { TokenServiceConfig } from '../../functions/core/token-service.js';
import { createVendRuntime, type VendRuntime } from '../../functions/vend-token/runtime.js';
import {
  DEMO_PROVIDER_CREDENTIALS,
  type ProviderSimulator,
} from '../../local/provider-simulator.js';

export const CALLER_ARN = 'arn:aws:sts::111122223333:assumed-role/checkout/session-1';
export const PARTNER_ARN = 'arn:aws:sts::111122223333:assumed-role/key-issuer/job';
export const STRANGER_ARN = 'arn:aws:sts::999999999999:assumed-role/checkout/session-1';

export const TEST_POLICY = AccessPolicy.parse(
  JSON.stringify({
    scopes: ['ba_demo_1', 'ba_demo_2'],
    grants: [
      { principal: 'arn:aws:iam::111122223333:role/checkout', scopes: ['*'] },
      { principal: 'arn:aws:iam::111122223333:role/key-issuer', unscoped: true },
    ],
  }),
);

export function demoCredentials(version = 'v1'): StaticCredentials {
  return new StaticCredentials({ ...DEMO_PROVIDER_CREDENTIALS, version });
}

export interface InstanceOptions {
  readonly sim: ProviderSimulator;
  readonly clock: Clock;
  readonly store?: TokenStore;
  readonly client?: DynamoDBClient;
  readonly table?: string;
  readonly sealer?: Sealer;
  readonly credentials?: CredentialsSource;
  readonly logger?: Logger;
  readonly tokenConfig?: TokenServiceConfig;
  readonly unscopedScopeMode?: 'omit' | 'empty';
  /** Default: TEST_POLICY, fixed. */
  readonly policy?: PolicyProvider;
}

/** One simulated Lambda instance: its own L1 and clients, the shared table and provider. */
export function makeInstance(options: InstanceOptions): VendRuntime {
  const store =
    options.store ??
    new DynamoDbTokenStore(options.client as DynamoDBClient, options.table as string);
  return createVendRuntime({
    store,
    sealer: options.sealer ?? SHARED_SEALER,
    credentials: options.credentials ?? demoCredentials(),
    provider: {
      baseUrl: options.sim.url,
      unscopedScopeMode: options.unscopedScopeMode ?? 'omit',
      backoffBaseMs: 5,
      timeoutMs: 1000,
    },
    policy: options.policy ?? fixedPolicy(TEST_POLICY),
    logger: options.logger ?? quietLogger(),
    clock: options.clock,
    tokenConfig: options.tokenConfig ?? {},
  });
}

/** All instances of one deployment share a sealing key, as they share the KMS key. */
export const SHARED_SEALER = new AesGcmSealer(randomBytes(32));

export const quietLogger = (): Logger => new Logger({ serviceName: 'test', logLevel: 'SILENT' });

/** A Function URL payload 2.0 event as AWS builds it. */
export function urlEvent(options: {
  path?: string;
  query?: string;
  method?: string;
  arn?: string | null;
}): LambdaFunctionURLEvent {
  const arn = options.arn === undefined ? CALLER_ARN : options.arn;
  const path = options.path ?? '/token';
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: options.query ?? '',
    headers: { host: 'example.lambda-url.us-east-1.on.aws' },
    requestContext: {
      accountId: 'anonymous',
      apiId: 'example',
      domainName: 'example.lambda-url.us-east-1.on.aws',
      domainPrefix: 'example',
      http: {
        method: options.method ?? 'GET',
        path,
        protocol: 'HTTP/1.1',
        sourceIp: '127.0.0.1',
        userAgent: 'test',
      },
      requestId: 'req',
      routeKey: '$default',
      stage: '$default',
      time: '',
      timeEpoch: 0,
      ...(arn === null
        ? {}
        : {
            authorizer: {
              iam: {
                accessKey: 'AKIA',
                accountId: '111122223333',
                callerId: 'AROA',
                cognitoIdentity: null,
                principalOrgId: null,
                userArn: arn,
                userId: 'AROA:session',
              },
            },
          }),
    },
    isBase64Encoded: false,
  } as LambdaFunctionURLEvent;
}

export interface Vended {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: Record<string, unknown>;
}

/** Calls the app and parses its answer. */
export async function vend(runtime: VendRuntime, event: LambdaFunctionURLEvent): Promise<Vended> {
  const result = (await runtime.app(event)) as Exclude<LambdaFunctionURLResult, string>;
  return {
    status: result.statusCode ?? 200,
    headers: (result.headers ?? {}) as Record<string, string>,
    body: JSON.parse(result.body ?? '{}') as Record<string, unknown>,
  };
}
