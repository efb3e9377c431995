/**
 * Schedules, the failed-runs queue, the dashboard, the alarms and the console
 * test events. Read-only assertions on the example stage share one fresh stack
 * per `describe`; tests with their own stage build their own.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import type { LambdaFunctionURLEvent } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseAdminEvent } from '../../functions/admin/admin-event.js';
import { AccessPolicy } from '../../functions/core/access-policy.js';
import { systemClock } from '../../functions/core/clock.js';
import { fixedPolicy } from '../../functions/core/policy-source.js';
import {
  parseClearPendingKeyEvent,
  parseKeyIssuingEvent,
} from '../../functions/issue-keys/event.js';
import { createVendApp } from '../../functions/vend-token/app.js';
import {
  TEST_EVENT_NAME,
  TEST_EVENT_REGISTRY,
} from '../../infra/constructs/console-test-events.js';
import { NAMESPACE, RUNBOOK_FILE } from '../../infra/constructs/observability.js';
import { example } from '../../infra/stages/example.js';
import { emittedMetrics } from '../support/emf.js';
import {
  ADMIN,
  aliasId,
  FUNCTIONS,
  functionId,
  ISSUE_KEYS,
  logicalId,
  REFRESH,
  resolveValue,
  stage,
  synth,
  testEventsOf,
  VEND,
} from '../support/infra.js';

const ROOT = resolve(import.meta.dirname, '../..');

describe('schedules and failed runs', () => {
  let template: Template;
  let queue: string;
  beforeAll(() => {
    template = synth().template;
    queue = logicalId(template, 'AWS::SQS::Queue', 'SqsManagedSseEnabled');
  });

  it.each([
    [REFRESH, 'rate(5 minutes)', 240],
    [ISSUE_KEYS, example.keyIssuing.schedule, 3600],
  ])(
    "invokes %s's live alias on %s with retries and the dead-letter queue",
    (name, expression, maxAge) => {
      template.hasResourceProperties('AWS::Scheduler::Schedule', {
        ScheduleExpression: expression,
        ScheduleExpressionTimezone: 'Etc/UTC',
        State: 'ENABLED',
        FlexibleTimeWindow: { Mode: 'OFF' },
        Target: {
          Arn: { Ref: aliasId(template, name) },
          Input: '{}',
          RetryPolicy: { MaximumRetryAttempts: 3, MaximumEventAgeInSeconds: maxAge },
          DeadLetterConfig: { Arn: { 'Fn::GetAtt': [queue, 'Arn'] } },
        },
      });
    },
  );

  it.each([
    [REFRESH, 1, 240],
    [ISSUE_KEYS, 2, 3600],
  ])(
    'retries a failed run of %s %i time(s), then sends it to the same queue',
    (name, retries, age) => {
      template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
        FunctionName: { Ref: functionId(template, name) },
        // The live alias the schedule invokes: `live` out of its ARN.
        Qualifier: { 'Fn::Select': [7, { 'Fn::Split': [':', { Ref: aliasId(template, name) }] }] },
        MaximumRetryAttempts: retries,
        MaximumEventAgeInSeconds: age,
        DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [queue, 'Arn'] } } },
      });
    },
  );

  it('schedules nothing but refresh and issue-keys', () => {
    template.resourceCountIs('AWS::Scheduler::Schedule', 2);
    template.resourceCountIs('AWS::Lambda::EventInvokeConfig', 2);
  });

  it('encrypts the failed-runs queue and refuses requests without TLS', () => {
    template.hasResourceProperties('AWS::SQS::Queue', {
      SqsManagedSseEnabled: true,
      MessageRetentionPeriod: 1_209_600,
    });
    template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      Queues: [{ Ref: queue }],
      PolicyDocument: {
        Statement: [
          Match.objectLike({
            Effect: 'Deny',
            Action: 'sqs:*',
            Principal: { AWS: '*' },
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
        ],
      },
    });
  });
});

/** A metric query's MetricStat: the Sum of a Powertools metric of one service. */
const serviceSum = (metricName: string, service: string) =>
  Match.objectLike({
    Metric: {
      Namespace: 'TokenVending',
      MetricName: metricName,
      Dimensions: [{ Name: 'service', Value: service }],
    },
    Stat: 'Sum',
  });

const readSource = (path: string): string => readFileSync(resolve(ROOT, path), 'utf8');

/** The metric names a source's string-literal union type `type` lists. */
function union(path: string, type: string): string[] {
  const source = readSource(path);
  const body = source.slice(source.indexOf(`export type ${type} =`)).split(';')[0] as string;
  return [...body.matchAll(/'([A-Za-z]+)'/g)].map((m) => m[1] as string);
}

/** The metric names a source adds by a literal `addMetric('...')`. */
const added = (path: string): string[] =>
  [...readSource(path).matchAll(/addMetric\('([A-Za-z]+)'/g)].map((m) => m[1] as string);

/** Every metric name the functions emit, read from their sources. */
function metricNamesInSources(): string[] {
  return [
    ...union('functions/core/token-service-types.ts', 'CoreMetric'),
    ...union('functions/issue-keys/ports.ts', 'KeyJobMetric'),
    ...added('functions/adapters/metrics.ts'),
    ...added('functions/refresh/handler.ts'),
  ];
}

interface Widget {
  type: string;
  properties: { title: string; metrics?: unknown[][]; alarms?: string[] };
}

/** Each graph's metrics as `namespace/name/dimension=value.../stat`, or the expression. */
function graphs(template: Template): Map<string, string[]> {
  const dashboard = Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0];
  const body = JSON.parse(resolveValue(template, dashboard?.Properties.DashboardBody)) as {
    widgets: Widget[];
  };
  return new Map(
    body.widgets
      .filter((w) => w.type === 'metric')
      .map((w) => [
        w.properties.title,
        (w.properties.metrics ?? []).map((entry) => {
          const options = entry.at(-1) as { stat?: string; expression?: string };
          if (options.expression !== undefined) return options.expression;
          const [namespace, name, ...dimensions] = entry.slice(0, -1) as string[];
          const pairs = [];
          for (let i = 0; i < dimensions.length; i += 2) {
            pairs.push(`${dimensions[i]}=${dimensions[i + 1]}`);
          }
          return [namespace, name, ...pairs, options.stat].join('/');
        }),
      ]),
  );
}

describe('dashboard and alarms', () => {
  let template: Template;
  let topic: string;
  let dashboard: Map<string, string[]>;
  beforeAll(() => {
    template = synth().template;
    topic = logicalId(template, 'AWS::SNS::Topic', 'alarms');
    dashboard = graphs(template);
  });

  it('reads the metrics the functions emit in the namespace and dimensions Powertools gives them', () => {
    const services = {
      'vend-token': readFileSync(resolve(ROOT, 'functions/vend-token/handler.ts'), 'utf8'),
      refresh: readFileSync(resolve(ROOT, 'functions/refresh/handler.ts'), 'utf8'),
      'issue-keys': readFileSync(resolve(ROOT, 'functions/issue-keys/handler.ts'), 'utf8'),
    };
    expect(services['vend-token']).toContain("createAwsRuntime(process.env, 'vend-token')");
    expect(services.refresh).toMatch(/createAwsRuntime\(\s*process\.env,\s*'refresh'/);
    expect(services['issue-keys']).toContain(
      "new Metrics({ namespace: 'TokenVending', serviceName: 'issue-keys' })",
    );

    const shown = [...dashboard.values()].flat();
    const metrics = metricNamesInSources();
    expect(metrics).toEqual(expect.arrayContaining(['Vends', 'UpstreamErrors', 'KeysIssued']));
    for (const name of metrics.filter((m) => m !== 'Vends')) {
      expect(shown.some((m) => new RegExp(`^TokenVending/${name}/service=`).test(m))).toBe(true);
    }
    expect(dashboard.get('Vends by outcome')).toEqual([
      `SEARCH('{TokenVending,outcome,service} MetricName="Vends" service="vend-token"', 'Sum', 300)`,
    ]);
    expect(dashboard.get('Vend latency (ms)')).toEqual(
      ['p50', 'p90', 'p99', 'Maximum'].map(
        (s) => `TokenVending/VendLatency/service=vend-token/${s}`,
      ),
    );
    expect(dashboard.get('Upstream token requests and errors')).toEqual([
      'TokenVending/UpstreamRequests/service=vend-token/Sum',
      'TokenVending/UpstreamRequests/service=refresh/Sum',
      'TokenVending/UpstreamErrors/service=vend-token/Sum',
      'TokenVending/UpstreamErrors/service=refresh/Sum',
    ]);
    expect(dashboard.get('Key issuing')).toContain(
      'TokenVending/KeyIssuingFailures/service=issue-keys/Sum',
    );
  });

  it('graphs every metric each function emits, under its own service (refresh lease waits, takeovers and stale-credential tokens too)', async () => {
    const core = union('functions/core/token-service-types.ts', 'CoreMetric');
    const policy = union('functions/core/policy-source.ts', 'PolicyMetric');
    // Vend and refresh share the cache core (createAwsRuntime); each its own service.
    const byService: Record<string, string[]> = {
      'vend-token': [...core, ...policy, 'VendLatency'],
      refresh: [...core, ...policy, ...added('functions/refresh/handler.ts')],
      'issue-keys': [...union('functions/issue-keys/ports.ts', 'KeyJobMetric'), ...policy],
      admin: [...union('functions/admin/admin.ts', 'AdminMetric'), ...policy],
    };
    expect(byService.refresh).toEqual(
      expect.arrayContaining(['LeaseWaits', 'LeaseTakeovers', 'ScheduledRefreshes']),
    );
    const saved = process.env.POWERTOOLS_METRICS_DISABLED;
    process.env.POWERTOOLS_METRICS_DISABLED = 'false';
    const emitted = await emittedMetrics(() => {
      for (const [serviceName, names] of Object.entries(byService)) {
        const metrics = new Metrics({ namespace: NAMESPACE, serviceName });
        for (const name of names) metrics.addMetric(name, MetricUnit.Count, 1);
        metrics.publishStoredMetrics();
      }
    }).finally(() => {
      if (saved === undefined) delete process.env.POWERTOOLS_METRICS_DISABLED;
      else process.env.POWERTOOLS_METRICS_DISABLED = saved;
    });

    const shown = [...dashboard.values()].flat();
    const missing = emitted
      .map((m) => `${m.namespace}/${m.name}/service=${m.dimensions.service}`)
      .filter((id) => !shown.some((entry) => entry.startsWith(`${id}/`)));
    expect(emitted.length).toBeGreaterThan(30);
    expect(missing).toEqual([]);
  });

  it('shows errors, throttles and the failed-runs queue of every function', () => {
    template.hasResourceProperties('AWS::CloudWatch::Dashboard', {
      DashboardName: 'token-vending-example',
    });
    for (const [title, metric] of [
      ['Function errors', 'Errors'],
      ['Function throttles', 'Throttles'],
    ] as const) {
      expect(dashboard.get(title)).toEqual(
        [VEND, REFRESH, ISSUE_KEYS, ADMIN].map(
          (name) =>
            `AWS/Lambda/${metric}/FunctionName=${functionId(template, name).toLowerCase()}-physical-name/Sum`,
        ),
      );
    }
    expect(dashboard.get('Failed runs queue')).toEqual([
      expect.stringMatching(
        /^AWS\/SQS\/ApproximateNumberOfMessagesVisible\/QueueName=.+\/Maximum$/,
      ),
    ]);
  });

  /** The paging alarms, to the topic; the release alarms only roll a release back. */
  // Release alarms roll a release back, policy watches a policy deployment: neither pages.
  const paging = () =>
    Object.values(template.findResources('AWS::CloudWatch::Alarm')).filter(
      (a) => !/-release-|-policy-watch-/.test(a.Properties.AlarmName as string),
    );

  it('raises exactly the alarms of the operations runbook', () => {
    const names = paging()
      .map((a) => a.Properties.AlarmName as string)
      .sort();

    expect(names).toEqual(
      [
        'upstream-errors',
        'credentials-rejected',
        'vend-internal-errors',
        'vend-url-5xx',
        'degraded',
        'unseal-failures',
        'policy-rejected',
        'policy-fetch-failures',
        ...['vend-token', 'refresh', 'issue-keys', 'admin'].flatMap((f) => [
          `${f}-errors`,
          `${f}-throttles`,
        ]),
        'key-issuing-failures',
        'failed-runs',
      ]
        .map((n) => `token-vending-example-${n}`)
        .sort(),
    );
  });

  it('points every alarm at its own entry of the runbook the repository ships', () => {
    const runbook = readFileSync(resolve(ROOT, RUNBOOK_FILE), 'utf8');
    const entries = new Set(
      [...runbook.matchAll(/^### (\S+)$/gm)].map(([, name]) => name as string),
    );
    const alarms = paging();
    expect(alarms.length).toBeGreaterThan(0);
    for (const alarm of alarms) {
      const name = (alarm.Properties.AlarmName as string).replace('token-vending-example-', '');
      expect(alarm.Properties.AlarmDescription).toMatch(
        new RegExp(`\\. Runbook: docs/operations\\.md, alarm ${name}\\.$`),
      );
      expect(entries, `${RUNBOOK_FILE} has no "### ${name}" entry`).toContain(name);
    }
  });

  it('sends every paging alarm and its recovery to the topic', () => {
    for (const alarm of paging()) {
      expect(alarm.Properties).toMatchObject({
        AlarmActions: [{ Ref: topic }],
        OKActions: [{ Ref: topic }],
        TreatMissingData: 'notBreaching',
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      });
    }
  });

  it('alarms on upstream errors of vend and refresh together, and on refreshes failed on the provider alone', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: 'token-vending-example-upstream-errors',
      Threshold: 5,
      EvaluationPeriods: 3,
      DatapointsToAlarm: 2,
      Metrics: Match.arrayWith([
        Match.objectLike({
          Expression: 'FILL(vend, 0) + FILL(refresh, 0) + 5 * FILL(provider, 0)',
        }),
        ...['vend-token', 'refresh'].map((service) =>
          Match.objectLike({
            MetricStat: serviceSum('UpstreamErrors', service),
          }),
        ),
        Match.objectLike({
          Id: 'provider',
          MetricStat: serviceSum('RefreshRunsFailedUpstream', 'refresh'),
        }),
      ]),
    });
  });

  it('alarms on any rejected credentials, from a vend or from the scheduled refresh', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: 'token-vending-example-credentials-rejected',
      Threshold: 1,
      EvaluationPeriods: 1,
      Metrics: Match.arrayWith([
        Match.objectLike({ Expression: 'FILL(vend, 0) + FILL(refresh, 0)' }),
        Match.objectLike({
          MetricStat: Match.objectLike({
            Metric: {
              Namespace: 'TokenVending',
              MetricName: 'Vends',
              Dimensions: Match.arrayWith([
                { Name: 'outcome', Value: 'error:upstream_credentials_rejected' },
                { Name: 'service', Value: 'vend-token' },
              ]),
            },
          }),
        }),
        Match.objectLike({
          MetricStat: Match.objectLike({
            Metric: { Namespace: 'TokenVending', MetricName: 'RefreshCredentialsRejected' },
          }),
        }),
      ]),
    });
    const refreshLogs =
      template.toJSON().Resources[functionId(template, REFRESH)].Properties.LoggingConfig.LogGroup;
    template.hasResourceProperties('AWS::Logs::MetricFilter', {
      LogGroupName: refreshLogs,
      FilterPattern:
        '{ ($.message = "scheduled refresh failed") && ($.error.code = "upstream_credentials_rejected") }',
      MetricTransformations: [
        {
          MetricNamespace: 'TokenVending',
          MetricName: 'RefreshCredentialsRejected',
          MetricValue: '1',
        },
      ],
    });
  });

  it('alarms on key-issuing failures and vend internal errors', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: 'token-vending-example-key-issuing-failures',
      Namespace: 'TokenVending',
      MetricName: 'KeyIssuingFailures',
      Dimensions: [{ Name: 'service', Value: 'issue-keys' }],
      Statistic: 'Sum',
      Threshold: 1,
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: 'token-vending-example-vend-internal-errors',
      MetricName: 'Vends',
      Dimensions: Match.arrayWith([{ Name: 'outcome', Value: 'error:internal_error' }]),
    });
  });

  it.each(FUNCTIONS)('alarms on throttles of %s', (name) => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/Lambda',
      MetricName: 'Throttles',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: functionId(template, name) } }],
      Statistic: 'Sum',
      Threshold: 1,
    });
  });

  it.each([VEND])('alarms on every failed invocation of %s', (name) => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: functionId(template, name) } }],
      Statistic: 'Sum',
      Threshold: 1,
    });
  });

  it.each([
    [ADMIN, 'admin', { invalid: 'InvalidEvents', invoked: 'InvokedFunctionFailures' }],
    [
      ISSUE_KEYS,
      'issue-keys',
      { invalid: 'InvalidEvents', refused: 'RefusedRequests', failedids: 'KeyIssuingRunsFailed' },
    ],
    [REFRESH, 'refresh', { provider: 'RefreshRunsFailedUpstream' }],
  ] as const)(
    'alarms on failed invocations of %s, less those another alarm pages for or an operator caused',
    (name, service, excused) => {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        AlarmName: `token-vending-example-${service}-errors`,
        Threshold: 1,
        Metrics: Match.arrayWith([
          Match.objectLike({
            Expression: [
              'FILL(errors, 0)',
              ...Object.keys(excused).map((id) => `FILL(${id}, 0)`),
            ].join(' - '),
          }),
          Match.objectLike({
            Id: 'errors',
            MetricStat: Match.objectLike({
              Metric: {
                Namespace: 'AWS/Lambda',
                MetricName: 'Errors',
                Dimensions: [{ Name: 'FunctionName', Value: { Ref: functionId(template, name) } }],
              },
              Stat: 'Sum',
            }),
          }),
          ...Object.entries(excused).map(([id, metricName]) =>
            Match.objectLike({
              Id: id,
              MetricStat: serviceSum(metricName, service),
            }),
          ),
        ]),
      });
    },
  );

  it("alarms on the vend URL's 5xx answers, which the function's Errors metric does not see", () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: 'token-vending-example-vend-url-5xx',
      Namespace: 'AWS/Lambda',
      MetricName: 'Url5xxCount',
      Dimensions: [{ Name: 'FunctionName', Value: VEND }],
      Statistic: 'Sum',
      Threshold: 5,
      EvaluationPeriods: 3,
      DatapointsToAlarm: 2,
    });
  });

  it.each([
    ['degraded', 'Degraded', 5, 3, 2],
    ['unseal-failures', 'UnsealFailures', 1, 1, 1],
  ])(
    'alarms on %s of vend and refresh together',
    (alarm, metricName, threshold, periods, datapoints) => {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        AlarmName: `token-vending-example-${alarm}`,
        Threshold: threshold,
        EvaluationPeriods: periods,
        DatapointsToAlarm: datapoints,
        Metrics: Match.arrayWith([
          Match.objectLike({ Expression: 'FILL(vend, 0) + FILL(refresh, 0)' }),
          ...['vend-token', 'refresh'].map((service) =>
            Match.objectLike({
              MetricStat: serviceSum(metricName, service),
            }),
          ),
        ]),
      });
    },
  );

  it('alarms when a run lands in the failed-runs queue', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: 'token-vending-example-failed-runs',
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Statistic: 'Maximum',
    });
  });

  it('encrypts the topic with its own rotating key and takes TLS publishes only', () => {
    const key = logicalId(template, 'AWS::KMS::Key', 'alarm topic');
    template.hasResourceProperties('AWS::SNS::Topic', {
      KmsMasterKeyId: { 'Fn::GetAtt': [key, 'Arn'] },
    });
    template.hasResourceProperties('AWS::KMS::Key', {
      EnableKeyRotation: true,
      KeyPolicy: {
        Statement: Match.arrayWith([
          {
            Effect: 'Allow',
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Action: ['kms:Decrypt', 'kms:GenerateDataKey'],
            Resource: '*',
          },
        ]),
      },
    });
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      Topics: [{ Ref: topic }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
          Match.objectLike({
            Sid: 'CloudWatchAlarmsOfThisAccount',
            Effect: 'Allow',
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Action: 'sns:Publish',
          }),
        ]),
      },
    });
  });

  it('subscribes the alarm e-mail', () => {
    template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: example.alarmEmail,
      TopicArn: { Ref: topic },
    });
  });
});

describe('alarm e-mail is optional', () => {
  it('subscribes nobody without one', () => {
    const { alarmEmail: _, ...rest } = example;
    synth(rest).template.resourceCountIs('AWS::SNS::Subscription', 0);
  });
});

describe('console test events', () => {
  let template: Template;
  beforeAll(() => {
    template = synth().template;
  });

  it('creates the shared registry if it is missing, and never deletes it', () => {
    const registry = Object.values(
      template.findResources('Custom::LambdaTestEventRegistry'),
    )[0] as { Properties: Record<string, string> };
    expect(registry.Properties.Delete).toBeUndefined();
    for (const phase of ['Create', 'Update']) {
      expect(JSON.parse(registry.Properties[phase] as string)).toEqual({
        service: '@aws-sdk/client-schemas',
        action: 'CreateRegistry',
        parameters: { RegistryName: TEST_EVENT_REGISTRY, Description: expect.any(String) },
        physicalResourceId: { id: TEST_EVENT_REGISTRY },
        ignoreErrorCodesMatching: 'ConflictException',
      });
    }
    template.resourceCountIs('AWS::EventSchemas::Registry', 0);
  });

  it('lets the registry custom resource create that one registry only', () => {
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: [
          {
            Effect: 'Allow',
            Action: 'schemas:CreateRegistry',
            Resource: {
              'Fn::Join': ['', Match.arrayWith([':registry/lambda-testevent-schemas'])],
            },
          },
        ],
      },
    });
  });

  it.each(FUNCTIONS)(
    'keeps the events of %s in _<function name>-schema, after the registry',
    (name) => {
      const registry = Object.keys(template.findResources('Custom::LambdaTestEventRegistry'))[0];
      template.hasResource('AWS::EventSchemas::Schema', {
        Properties: {
          RegistryName: 'lambda-testevent-schemas',
          SchemaName: `_${name}-schema`,
          Type: 'OpenApi3',
        },
        DependsOn: Match.arrayWith([registry]),
      });
    },
  );

  it('writes each schema as SAM CLI does: OpenAPI 3 with the events under components.examples', () => {
    for (const schema of Object.values(template.findResources('AWS::EventSchemas::Schema'))) {
      const content = JSON.parse(schema.Properties.Content);
      expect(content).toMatchObject({
        openapi: '3.0.0',
        info: { version: '1.0.0', title: 'Event' },
        paths: {},
        components: { schemas: { Event: { type: 'object' } }, examples: expect.any(Object) },
      });
      for (const [name, example] of Object.entries(content.components.examples)) {
        expect(name).toMatch(TEST_EVENT_NAME);
        expect(Object.keys(example as object)).toEqual(['value']);
      }
    }
  });

  it('offers every admin action, each a valid admin event', () => {
    const events = testEventsOf(template, ADMIN);
    const parsed = Object.values(events).map((event) => parseAdminEvent(event));

    expect(new Set(parsed.map((e) => e.action))).toEqual(
      new Set(['status', 'invalidate', 'refresh', 'issue-keys', 'clear-pending-key']),
    );
    expect(events).toMatchObject({
      status: { action: 'status' },
      'invalidate-scope': { action: 'invalidate', scope: 'ba_123' },
      'invalidate-all': { action: 'invalidate', all: true },
      'refresh-scope': { action: 'refresh', scope: 'ba_123' },
      'refresh-unscoped': { action: 'refresh', scope: 'unscoped' },
      'issue-keys-force': { action: 'issue-keys', businessApplicationIds: ['ba_123'], force: true },
    });
  });

  it('offers manual key-issuing runs and clear-pending-key, each an event the job accepts', () => {
    const events = testEventsOf(template, ISSUE_KEYS);

    expect(Object.keys(events)).toEqual([
      'scheduled-run',
      'manual-run',
      'manual-run-force',
      'clear-pending-key',
    ]);
    const { 'clear-pending-key': clear, ...runs } = events;
    for (const event of Object.values(runs))
      expect(() => parseKeyIssuingEvent(event)).not.toThrow();
    expect(parseClearPendingKeyEvent(clear)).toMatchObject({ businessApplicationId: 'ba_123' });
    expect(parseKeyIssuingEvent(events['manual-run-force'])).toEqual({
      businessApplicationIds: ['ba_123'],
      force: true,
    });
  });

  it('offers the refresh its scheduled and forced runs', () => {
    const events = testEventsOf(template, REFRESH);

    expect(events['scheduled-run']).toEqual({});
    expect(parseAdminEvent(events['refresh-unscoped'])).toEqual({
      action: 'refresh',
      scope: undefined,
    });
  });

  it('offers vend the health check and its error paths, none carrying an identity', async () => {
    const events = testEventsOf(template, VEND);
    const vend = createVendApp({
      tokens: {
        getToken: () => {
          throw new Error('no vend test event may reach a token');
        },
      },
      policy: fixedPolicy(AccessPolicy.parse(JSON.stringify(example.accessPolicy), 'test')),
      logger: { info: () => {}, warn: () => {}, error: () => {} },
      clock: systemClock,
    });
    const answers: Record<string, [number, string | undefined]> = {};
    for (const [name, event] of Object.entries(events)) {
      expect(JSON.stringify(event)).not.toMatch(/authorizer|userArn|iam/i);
      const result = (await vend(event as LambdaFunctionURLEvent)) as {
        statusCode: number;
        body: string;
      };
      answers[name] = [result.statusCode, JSON.parse(result.body).code];
    }

    expect(answers).toEqual({
      healthz: [200, undefined],
      'invalid-request': [400, 'invalid_request'],
      unauthenticated: [401, 'unauthenticated'],
      'not-found': [404, 'not_found'],
      'method-not-allowed': [405, 'method_not_allowed'],
    });
  });

  it('uses the stage own scope and key-issuing id in the examples', () => {
    const { template: other } = synth(
      stage({
        accessPolicy: { scopes: ['acme_1'], grants: [] },
        keyIssuing: { businessApplicationIds: ['acme_9'], schedule: 'rate(1 day)' },
      }),
    );

    expect(testEventsOf(other, ADMIN)['refresh-scope']).toEqual({
      action: 'refresh',
      scope: 'acme_1',
    });
    expect(testEventsOf(other, ISSUE_KEYS)['manual-run']).toEqual({
      businessApplicationIds: ['acme_9'],
    });
  });
});
