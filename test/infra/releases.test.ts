import type { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { emittedMetrics, failingVend, sameMetric, watchedMetric } from '../support/emf.js';
import {
  ADMIN,
  aliasId,
  FUNCTIONS,
  functionId,
  ISSUE_KEYS,
  logicalId,
  REFRESH,
  stage,
  statementsOf,
  synth,
  VEND,
} from '../support/infra.js';

const VALIDATOR = 'token-vending-example-policy-validator';
const ALL = [...FUNCTIONS, VALIDATOR];

const alarmId = (template: Template, name: string) =>
  Object.keys(
    template.findResources('AWS::CloudWatch::Alarm', {
      Properties: { AlarmName: `token-vending-example-${name}` },
    }),
  )[0] as string;

describe('releases', () => {
  let template: Template;
  beforeAll(() => {
    template = synth().template;
  });

  it.each(ALL)('publishes %s behind a live alias that CodeDeploy moves', (name) => {
    const alias = template.toJSON().Resources[aliasId(template, name)];
    expect(alias.Properties).toMatchObject({
      Name: 'live',
      FunctionVersion: { 'Fn::GetAtt': [expect.stringContaining('CurrentVersion'), 'Version'] },
    });
    expect(alias.Properties).not.toHaveProperty('ProvisionedConcurrencyConfig');
    const group = alias.UpdatePolicy.CodeDeployLambdaAliasUpdate.DeploymentGroupName.Ref;
    expect(template.toJSON().Resources[group].Properties.DeploymentGroupName).toBe(name);
  });

  it('shifts vend by canary, 10 % for 5 minutes, and rolls back when a release alarm fires', () => {
    template.hasResourceProperties('AWS::CodeDeploy::DeploymentGroup', {
      DeploymentGroupName: VEND,
      DeploymentConfigName: 'CodeDeployDefault.LambdaCanary10Percent5Minutes',
      DeploymentStyle: { DeploymentOption: 'WITH_TRAFFIC_CONTROL', DeploymentType: 'BLUE_GREEN' },
      AlarmConfiguration: {
        Enabled: true,
        Alarms: [
          'vend-release-5xx',
          'vend-release-errors',
          'vend-release-internal-errors',
          'vend-release-latency',
        ].map((name) => ({
          Name: { Ref: alarmId(template, name) },
        })),
      },
      AutoRollbackConfiguration: {
        Enabled: true,
        Events: ['DEPLOYMENT_FAILURE', 'DEPLOYMENT_STOP_ON_REQUEST', 'DEPLOYMENT_STOP_ON_ALARM'],
      },
    });
  });

  it("judges vend's release alarms by the minute: URL 5xx, function errors, latency p99", () => {
    const props = (name: string) => template.toJSON().Resources[alarmId(template, name)].Properties;
    expect(props('vend-release-5xx')).toMatchObject({
      Namespace: 'AWS/Lambda',
      MetricName: 'Url5xxCount',
      Dimensions: [{ Name: 'FunctionName', Value: VEND }],
      Period: 60,
      Threshold: 5,
      EvaluationPeriods: 1,
    });
    // The live alias's errors: both versions while the canary shifts, nothing invoked otherwise.
    expect(props('vend-release-errors')).toMatchObject({
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [
        { Name: 'FunctionName', Value: VEND },
        { Name: 'Resource', Value: `${VEND}:live` },
      ],
      Statistic: 'Sum',
      Period: 60,
      Threshold: 1,
      EvaluationPeriods: 1,
    });
    expect(props('vend-release-latency')).toMatchObject({
      Namespace: 'TokenVending',
      MetricName: 'VendLatency',
      Dimensions: [{ Name: 'service', Value: 'vend-token' }],
      ExtendedStatistic: 'p99',
      Period: 60,
      Threshold: 3000,
      EvaluationPeriods: 3,
      DatapointsToAlarm: 2,
    });
    // They roll back; the paging alarms page.
    for (const name of [
      'vend-release-5xx',
      'vend-release-errors',
      'vend-release-internal-errors',
      'vend-release-latency',
    ]) {
      expect(props(name)).not.toHaveProperty('AlarmActions');
    }
  });

  it('rolls a vend canary back on one internal_error answer, which a canary of few callers never turns into five URL 5xx a minute', async () => {
    // What a release with a bug answers: 500 internal_error, a successful invocation.
    const vend = failingVend(new TypeError('a bug in the new version'));
    let status = 0;
    const emitted = await emittedMetrics(async () => {
      status = await vend.answer();
    });
    expect(status).toBe(500);
    const internalErrors = emitted.find(
      (m) => m.name === 'Vends' && m.dimensions.outcome === 'error:internal_error',
    );
    expect(internalErrors).toBeDefined();

    const resources = template.toJSON().Resources;
    const group = Object.values(template.findResources('AWS::CodeDeploy::DeploymentGroup')).find(
      (g) => g.Properties.DeploymentGroupName === VEND,
    );
    const alarms = group?.Properties.AlarmConfiguration.Alarms.map(
      (a: { Name: { Ref: string } }) => resources[a.Name.Ref].Properties,
    );
    const firesOnOne = alarms.filter(
      (alarm: Record<string, unknown>) =>
        alarm.MetricName !== undefined &&
        sameMetric(watchedMetric(alarm as never), internalErrors as never) &&
        alarm.Statistic === 'Sum' &&
        (alarm.Threshold as number) <= 1 &&
        (alarm.Period as number) <= 60,
    );
    expect(firesOnOne).toHaveLength(1);
  });

  it.each([REFRESH, ISSUE_KEYS, ADMIN, VALIDATOR])(
    'moves %s all at once, rolled back by an alarm on its own release',
    (name) => {
      const alarm = `${name.slice('token-vending-example-'.length)}-release-errors`;
      template.hasResourceProperties('AWS::CodeDeploy::DeploymentGroup', {
        DeploymentGroupName: name,
        DeploymentConfigName: 'CodeDeployDefault.LambdaAllAtOnce',
        AlarmConfiguration: {
          Enabled: true,
          Alarms: [{ Name: { Ref: alarmId(template, alarm) } }],
        },
        AutoRollbackConfiguration: {
          Enabled: true,
          Events: ['DEPLOYMENT_FAILURE', 'DEPLOYMENT_STOP_ON_REQUEST', 'DEPLOYMENT_STOP_ON_ALARM'],
        },
      });
    },
  );

  it('judges each other release by the minute: one failed invocation of its live alias', () => {
    const props = (name: string) => template.toJSON().Resources[alarmId(template, name)].Properties;
    const errorsOf = (name: string) => ({
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [
        { Name: 'FunctionName', Value: name },
        { Name: 'Resource', Value: `${name}:live` },
      ],
    });
    for (const name of [REFRESH, VALIDATOR]) {
      const alarm = props(`${name.slice('token-vending-example-'.length)}-release-errors`);
      expect(alarm).toMatchObject({
        ...errorsOf(name),
        Statistic: 'Sum',
        Period: 60,
        Threshold: 1,
        EvaluationPeriods: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
      });
      expect(alarm).not.toHaveProperty('AlarmActions');
    }
    // Admin and issue-keys leave out an operator's refused events and, for the
    // admin, the invoked function's failures (its own release alarm judges
    // them); a key run failed for ids still rolls issue-keys back.
    for (const [name, service, excused] of [
      [ADMIN, 'admin', { invalid: 'InvalidEvents', invoked: 'InvokedFunctionFailures' }],
      [ISSUE_KEYS, 'issue-keys', { invalid: 'InvalidEvents', refused: 'RefusedRequests' }],
    ] as const) {
      const alarm = props(`${service}-release-errors`);
      expect(alarm).toMatchObject({ Threshold: 1, EvaluationPeriods: 1 });
      expect(alarm).not.toHaveProperty('AlarmActions');
      expect(alarm.Metrics).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            Expression: [
              'FILL(errors, 0)',
              ...Object.keys(excused).map((id) => `FILL(${id}, 0)`),
            ].join(' - '),
          }),
          expect.objectContaining({
            Id: 'errors',
            MetricStat: expect.objectContaining({
              Metric: errorsOf(name),
              Period: 60,
              Stat: 'Sum',
            }),
          }),
          ...Object.entries(excused).map(([id, metricName]) =>
            expect.objectContaining({
              Id: id,
              MetricStat: expect.objectContaining({
                Metric: {
                  Namespace: 'TokenVending',
                  MetricName: metricName,
                  Dimensions: [{ Name: 'service', Value: service }],
                },
                Period: 60,
              }),
            }),
          ),
        ]),
      );
    }
  });

  it('rolls every deployment group back on failure, on request and on alarm', () => {
    const groups = Object.values(template.findResources('AWS::CodeDeploy::DeploymentGroup'));
    expect(groups).toHaveLength(ALL.length);
    for (const group of groups) {
      expect(group.Properties.AlarmConfiguration.Alarms.length).toBeGreaterThan(0);
      expect(group.Properties.AutoRollbackConfiguration).toEqual({
        Enabled: true,
        Events: ['DEPLOYMENT_FAILURE', 'DEPLOYMENT_STOP_ON_REQUEST', 'DEPLOYMENT_STOP_ON_ALARM'],
      });
    }
  });

  it("names the admin function's live alias, what operators invoke", () => {
    template.hasOutput('AdminFunctionName', { Value: { Ref: functionId(template, ADMIN) } });
    template.hasOutput('AdminFunctionAlias', { Value: `${ADMIN}:live` });
    expect(template.toJSON().Resources[aliasId(template, ADMIN)].Properties.Name).toBe('live');
  });

  it('outputs what removing a stage needs: the table ARN and the exact log group names', () => {
    // An export to S3 names the table by ARN.
    template.hasOutput('TableArn', {
      Value: { 'Fn::GetAtt': [logicalId(template, 'AWS::DynamoDB::Table', '"ttl"'), 'Arn'] },
    });
    // By name, not by a prefix that a stage named longer (prod, prod-eu) shares.
    const groupOf = (name: string) =>
      template.toJSON().Resources[functionId(template, name)].Properties.LoggingConfig.LogGroup;
    template.hasOutput('FunctionLogGroups', {
      Value: { 'Fn::Join': [',', ALL.map(groupOf)] },
    });
  });

  it('lets CodeDeploy move these aliases and read alarms, through no managed policy', () => {
    const group = Object.values(
      template.findResources('AWS::CodeDeploy::DeploymentGroup', {
        Properties: { DeploymentGroupName: VEND },
      }),
    )[0] as { Properties: { ServiceRoleArn: { 'Fn::GetAtt': [string, string] } } };
    const role = template.toJSON().Resources[group.Properties.ServiceRoleArn['Fn::GetAtt'][0]];

    expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    expect(role.Properties.Policies).toEqual([
      {
        PolicyName: 'MoveLiveAliases',
        PolicyDocument: {
          Version: '2012-10-17',
          Statement: [
            {
              Effect: 'Allow',
              Action: [
                'lambda:GetAlias',
                'lambda:GetProvisionedConcurrencyConfig',
                'lambda:UpdateAlias',
              ],
              Resource: expect.arrayContaining(
                ALL.map((name) => ({ Ref: aliasId(template, name) })),
              ),
            },
            { Effect: 'Allow', Action: 'cloudwatch:DescribeAlarms', Resource: '*' },
          ],
        },
      },
    ]);
    expect(role.Properties.Policies[0].PolicyDocument.Statement[0].Resource).toHaveLength(5);
    expect(statementsOf(template, group.Properties.ServiceRoleArn['Fn::GetAtt'][0])).toEqual([]);
  });
});

describe('release settings of a stage', () => {
  it('moves vend all at once, and judges latency by its own threshold, where the stage says', () => {
    const { template } = synth(stage({ vendDeployment: 'AllAtOnce', vendLatencyP99AlarmMs: 1500 }));

    template.hasResourceProperties('AWS::CodeDeploy::DeploymentGroup', {
      DeploymentGroupName: VEND,
      DeploymentConfigName: 'CodeDeployDefault.LambdaAllAtOnce',
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: 'token-vending-example-vend-release-latency',
      Threshold: 1500,
    });
  });

  it("provisions concurrency on vend's live alias only when the stage asks", () => {
    const { template } = synth(stage({ provisionedConcurrency: 5 }));

    expect(
      template.toJSON().Resources[aliasId(template, VEND)].Properties.ProvisionedConcurrencyConfig,
    ).toEqual({ ProvisionedConcurrentExecutions: 5 });
    for (const name of [REFRESH, ISSUE_KEYS, ADMIN]) {
      expect(template.toJSON().Resources[aliasId(template, name)].Properties).not.toHaveProperty(
        'ProvisionedConcurrencyConfig',
      );
    }
  });

  it('keeps the table, the key and the logs of a stage, and protects it, unless it is throwaway', () => {
    const kept = synth().template;
    const throwaway = synth(stage({ throwaway: true, terminationProtection: undefined }));

    const of = (template: Template, type: string) =>
      Object.values(template.findResources(type)) as Array<{
        DeletionPolicy?: string;
        Properties: Record<string, unknown>;
      }>;
    const cacheKey = (template: Template) =>
      of(template, 'AWS::KMS::Key').find((k) =>
        String(k.Properties.Description).includes('seals cached tokens'),
      );

    expect(of(kept, 'AWS::DynamoDB::Table')[0]).toMatchObject({
      DeletionPolicy: 'Retain',
      Properties: { DeletionProtectionEnabled: true },
    });
    expect(cacheKey(kept)).toMatchObject({ DeletionPolicy: 'Retain' });
    expect(
      of(kept, 'AWS::Logs::LogGroup').filter((g) => g.DeletionPolicy === 'Retain'),
    ).toHaveLength(5);

    expect(throwaway.stack.terminationProtection).toBe(false);
    expect(of(throwaway.template, 'AWS::DynamoDB::Table')[0]).toMatchObject({
      DeletionPolicy: 'Delete',
      Properties: { DeletionProtectionEnabled: false },
    });
    expect(cacheKey(throwaway.template)).toMatchObject({
      DeletionPolicy: 'Delete',
      Properties: { PendingWindowInDays: 7 },
    });
    expect(
      of(throwaway.template, 'AWS::Logs::LogGroup').every((g) => g.DeletionPolicy !== 'Retain'),
    ).toBe(true);
    // Nothing of the stack is kept behind: a stage of the same name can be deployed again.
    expect(
      Object.values(throwaway.template.toJSON().Resources).filter(
        (r) => (r as { DeletionPolicy?: string }).DeletionPolicy === 'Retain',
      ),
    ).toEqual([]);
  });
});
