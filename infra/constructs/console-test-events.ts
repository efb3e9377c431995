import { ArnFormat, Stack } from 'aws-cdk-lib';
import * as eventschemas from 'aws-cdk-lib/aws-eventschemas';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as cr from 'aws-cdk-lib/custom-resources';
import { Construct } from 'constructs';
import type { StageConfig } from '../config.js';
import { deployTimeCall } from './deploy-time-calls.js';
import type { TokenVendingFunction } from './token-vending-function.js';

/**
 * The registry where the Lambda console keeps shareable test events (one
 * schema per function, `_<function name>-schema`), as SAM CLI's
 * `samcli/lib/shared_test_events/lambda_shared_test_event.py` writes them.
 */
export const TEST_EVENT_REGISTRY = 'lambda-testevent-schemas';

/** Test event names as the console takes them. */
export const TEST_EVENT_NAME = /^[A-Za-z0-9._-]{1,25}$/;

export type TestEvents = Readonly<Record<string, unknown>>;

/**
 * A payload 2.0 Function URL event as the URL makes it, but with no
 * `authorizer`: no caller identity. For the health check and the error paths
 * only, none of which reaches a token.
 */
function urlEvent(method: string, path: string, query = ''): Record<string, unknown> {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: query,
    headers: { host: 'console-test.lambda-url.invalid' },
    ...(query === ''
      ? {}
      : { queryStringParameters: Object.fromEntries(new URLSearchParams(query)) }),
    requestContext: {
      accountId: 'anonymous',
      apiId: 'console-test',
      domainName: 'console-test.lambda-url.invalid',
      domainPrefix: 'console-test',
      http: {
        method,
        path,
        protocol: 'HTTP/1.1',
        sourceIp: '127.0.0.1',
        userAgent: 'lambda-console-test',
      },
      requestId: 'console-test',
      routeKey: '$default',
      stage: '$default',
      time: '01/Jan/2026:00:00:00 +0000',
      timeEpoch: 1767225600000,
    },
    isBase64Encoded: false,
  };
}

/**
 * The shareable test events of each function, named as the console shows them.
 * The examples use the stage's first scope and first key-issuing id.
 *
 * No vend event carries a caller identity. The vend function takes its caller
 * from the event, so an event naming a principal would be a forged identity
 * handed past the URL's SigV4 check: the very bypass the guardrails deny
 * (infra/constructs/guardrails.ts). The vend events cover the health check and
 * the error paths (400, 401, 404, 405), none of which reaches a token. Where
 * the guardrails are attached, even these are refused: a direct Invoke of vend
 * is denied to everyone, so smoke-test the URL itself (`tvm`, `curl`).
 */
export function consoleTestEvents(config: StageConfig): {
  admin: TestEvents;
  issueKeys: TestEvents;
  refresh: TestEvents;
  vend: TestEvents;
} {
  const scope = config.accessPolicy.scopes[0] ?? 'ba_123';
  const id = config.keyIssuing.businessApplicationIds[0] ?? scope;
  // Edit the reason: it is logged as the operator's account of what the provider confirmed.
  const clearPendingKey = {
    action: 'clear-pending-key',
    businessApplicationId: id,
    reason: 'Provider confirmed nothing was issued under the pending key (ticket: EDIT ME)',
  };
  return {
    admin: {
      status: { action: 'status' },
      'invalidate-scope': { action: 'invalidate', scope },
      'invalidate-unscoped': { action: 'invalidate', scope: 'unscoped' },
      'invalidate-all': { action: 'invalidate', all: true },
      'refresh-scope': { action: 'refresh', scope },
      'refresh-unscoped': { action: 'refresh', scope: 'unscoped' },
      'issue-keys-configured': { action: 'issue-keys' },
      'issue-keys-one-id': { action: 'issue-keys', businessApplicationIds: [id] },
      'issue-keys-force': { action: 'issue-keys', businessApplicationIds: [id], force: true },
      'clear-pending-key': clearPendingKey,
    },
    issueKeys: {
      'scheduled-run': {},
      'manual-run': { businessApplicationIds: [id] },
      'manual-run-force': { businessApplicationIds: [id], force: true },
      'clear-pending-key': clearPendingKey,
    },
    refresh: {
      'scheduled-run': {},
      'refresh-scope': { action: 'refresh', scope },
      'refresh-unscoped': { action: 'refresh', scope: 'unscoped' },
    },
    vend: {
      healthz: urlEvent('GET', '/healthz'),
      'invalid-request': urlEvent('GET', '/token', `scope=${scope}&min_ttl=99999`),
      unauthenticated: urlEvent('GET', '/token', `scope=${scope}`),
      'not-found': urlEvent('GET', '/tokens'),
      'method-not-allowed': urlEvent('POST', '/token'),
    },
  };
}

/** The schema document the console reads: OpenAPI 3 with the events under `components.examples`. */
export function testEventSchema(events: TestEvents): string {
  return JSON.stringify({
    openapi: '3.0.0',
    info: { version: '1.0.0', title: 'Event' },
    paths: {},
    components: {
      schemas: { Event: { type: 'object' } },
      examples: Object.fromEntries(
        Object.entries(events).map(([name, value]) => [name, { value }]),
      ),
    },
  });
}

export interface ConsoleTestEventsProps {
  readonly config: StageConfig;
  readonly vend: TokenVendingFunction;
  readonly refresh: TokenVendingFunction;
  readonly issueKeys: TokenVendingFunction;
  readonly admin: TokenVendingFunction;
  readonly logRetention: logs.RetentionDays;
}

/**
 * Shareable test events in the Lambda console for every admin action, manual
 * key-issuing runs and the refresh, so an operator picks one in the Test tab.
 *
 * The registry is account-wide and may or may not exist: the console creates
 * it the first time anyone saves a shareable event. A CloudFormation registry
 * resource would fail where it exists and would delete everyone's events with
 * this stack. So a custom resource calls CreateRegistry and ignores
 * ConflictException (it exists), and never deletes it; the schemas are
 * ordinary resources of this stack and go with it.
 */
export class ConsoleTestEvents extends Construct {
  readonly schemas: eventschemas.CfnSchema[] = [];

  constructor(scope: Construct, id: string, props: ConsoleTestEventsProps) {
    super(scope, id);
    const registryArn = Stack.of(this).formatArn({
      service: 'schemas',
      resource: 'registry',
      resourceName: TEST_EVENT_REGISTRY,
      arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
    });
    const createRegistry: cr.AwsSdkCall = {
      service: '@aws-sdk/client-schemas',
      action: 'CreateRegistry',
      parameters: {
        RegistryName: TEST_EVENT_REGISTRY,
        Description: 'Shareable test events of Lambda functions (Lambda console)',
      },
      physicalResourceId: cr.PhysicalResourceId.of(TEST_EVENT_REGISTRY),
      // It exists already: created by the console, SAM CLI or another stack.
      ignoreErrorCodesMatching: 'ConflictException',
    };
    const registry = deployTimeCall(this, 'Registry', {
      resourceType: 'Custom::LambdaTestEventRegistry',
      onCreate: createRegistry,
      onUpdate: createRegistry,
      // No onDelete: the registry holds other functions' shareable events too.
      statements: [
        new iam.PolicyStatement({ actions: ['schemas:CreateRegistry'], resources: [registryArn] }),
      ],
      logRetention: props.logRetention,
    });

    const events = consoleTestEvents(props.config);
    const entries: Array<[string, TokenVendingFunction, TestEvents]> = [
      ['Admin', props.admin, events.admin],
      ['IssueKeys', props.issueKeys, events.issueKeys],
      ['Refresh', props.refresh, events.refresh],
      ['VendToken', props.vend, events.vend],
    ];
    for (const [name, fn, fnEvents] of entries) {
      const schema = new eventschemas.CfnSchema(this, `${name}Schema`, {
        registryName: TEST_EVENT_REGISTRY,
        schemaName: `_${fn.functionName}-schema`,
        type: 'OpenApi3',
        content: testEventSchema(fnEvents),
        description: `Shareable test events of ${fn.functionName}`,
      });
      schema.node.addDependency(registry);
      this.schemas.push(schema);
    }
  }
}
