import { Match, type Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { UpstreamUnavailableError } from '../../functions/core/errors.js';
import {
  emittedMetrics,
  failingVend,
  type MetricIdentity,
  sameMetric,
  watchedMetric,
} from '../support/emf.js';
import { aliasId, resolveValue, stage, synth, VEND } from '../support/infra.js';

const VALIDATOR = 'token-vending-example-policy-validator';

describe('the access policy in AppConfig', () => {
  let template: Template;
  const only = (type: string): string => {
    const ids = Object.keys(template.findResources(type));
    expect(ids).toHaveLength(1);
    return ids[0] as string;
  };
  beforeAll(() => {
    template = synth().template;
  });
  /** The permission that lets AppConfig invoke the validator. */
  const permissionId = (): string => {
    const ids = Object.keys(
      template.findResources('AWS::Lambda::Permission', {
        Properties: { Principal: 'appconfig.amazonaws.com' },
      }),
    );
    expect(ids).toHaveLength(1);
    return ids[0] as string;
  };

  it('keeps one hosted free-form profile that only the Lambda validator lets a version through', () => {
    const validator = aliasId(template, VALIDATOR);
    template.hasResourceProperties('AWS::AppConfig::Application', {
      Name: 'token-vending-example',
    });
    template.hasResourceProperties('AWS::AppConfig::ConfigurationProfile', {
      ApplicationId: { Ref: only('AWS::AppConfig::Application') },
      Name: 'access-policy',
      LocationUri: 'hosted',
      Type: 'AWS.Freeform',
      Validators: [{ Type: 'LAMBDA', Content: { Ref: validator } }],
    });
    template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      FunctionName: { Ref: validator },
      Principal: 'appconfig.amazonaws.com',
    });
  });

  it('rolls a deployment back when its one-minute watches of rejections, vend errors or internal errors fire', () => {
    const alarm = (name: string) =>
      Object.keys(
        template.findResources('AWS::CloudWatch::Alarm', {
          Properties: { AlarmName: `token-vending-example-${name}` },
        }),
      )[0];
    const role = Object.keys(
      template.findResources('AWS::IAM::Role', {
        Properties: {
          AssumeRolePolicyDocument: Match.objectLike({
            Statement: [Match.objectLike({ Principal: { Service: 'appconfig.amazonaws.com' } })],
          }),
        },
      }),
    )[0];
    const environment = template.toJSON().Resources[only('AWS::AppConfig::Environment')];

    expect(environment.Properties).toMatchObject({ Name: 'example' });
    expect(environment.Properties.Monitors).toEqual(
      [
        'policy-watch-rejected',
        'policy-watch-vend-errors',
        'policy-watch-vend-internal-errors',
      ].map((name) => ({
        AlarmArn: { 'Fn::GetAtt': [alarm(name), 'Arn'] },
        AlarmRoleArn: { 'Fn::GetAtt': [role, 'Arn'] },
      })),
    );
    template.hasResourceProperties('AWS::IAM::Role', {
      Policies: [
        {
          PolicyName: 'DescribeAlarms',
          PolicyDocument: {
            Statement: [{ Action: 'cloudwatch:DescribeAlarms', Effect: 'Allow', Resource: '*' }],
          },
        },
      ],
    });
  });

  it('does not roll a policy deployment back for a provider outage, which no policy version causes', async () => {
    // One minute of a provider outage: every vend answers 503 upstream_unavailable.
    const vend = failingVend(new UpstreamUnavailableError('the provider is down', 30));
    const answers = 20;
    const emitted = await emittedMetrics(async () => {
      for (let i = 0; i < answers; i++) expect(await vend.answer()).toBe(503);
    });
    // The minute's sums: the functions' EMF, and what Lambda counts for the URL.
    const sums: Array<[MetricIdentity, number]> = [
      ...emitted.map((m): [MetricIdentity, number] => [m, 1]),
      ...['UrlRequestCount', 'Url5xxCount', 'Invocations'].map((name): [MetricIdentity, number] => [
        { namespace: 'AWS/Lambda', name, dimensions: { FunctionName: VEND } },
        answers,
      ]),
    ];
    const sum = (metric: MetricIdentity): number | undefined => {
      const matching = sums.filter(([m]) => sameMetric(m, metric));
      return matching.length === 0 ? undefined : matching.reduce((a, [, n]) => a + n, 0);
    };
    /** The alarm's value for that minute; missing data counts as not breaching. */
    const value = (alarm: {
      MetricName?: string;
      Metrics?: Array<{
        Id: string;
        Expression?: string;
        ReturnData?: boolean;
        MetricStat?: { Metric: Parameters<typeof watchedMetric>[0] };
      }>;
    }): number => {
      if (alarm.MetricName !== undefined) return sum(watchedMetric(alarm as never)) ?? 0;
      const ids = new Map<string, number | undefined>();
      for (const m of alarm.Metrics ?? [])
        if (m.MetricStat) ids.set(m.Id, sum(watchedMetric(m.MetricStat.Metric)));
      const expression = (alarm.Metrics ?? []).find((m) => m.ReturnData !== false)
        ?.Expression as string;
      const arithmetic = expression.replace(/FILL\((\w+), 0\)/g, (_, id) =>
        String(ids.get(id) ?? 0),
      );
      expect(arithmetic).toMatch(/^[\d\s+-]+$/);
      return Function(`return ${arithmetic}`)() as number;
    };

    const environment = template.toJSON().Resources[only('AWS::AppConfig::Environment')];
    const resources = template.toJSON().Resources;
    const firing = (
      environment.Properties.Monitors as Array<{ AlarmArn: { 'Fn::GetAtt': [string] } }>
    )
      .map((monitor) => resources[monitor.AlarmArn['Fn::GetAtt'][0]].Properties)
      .filter((alarm) => value(alarm) >= alarm.Threshold)
      .map((alarm) => alarm.AlarmName);
    expect(firing).toEqual([]);
  });

  it('regression: watches a deployment long enough for each rollback alarm to fire', () => {
    // The monitors were the five-minute paging alarms, one of them needing 2 of
    // 3 periods: up to 15 minutes, past the 7 minutes a deployment is watched.
    const environment = template.toJSON().Resources[only('AWS::AppConfig::Environment')];
    const alarms = template.toJSON().Resources;
    const strategy = template.toJSON().Resources[only('AWS::AppConfig::DeploymentStrategy')]
      .Properties as { DeploymentDurationInMinutes: number; FinalBakeTimeInMinutes: number };
    const watchedSeconds =
      (strategy.DeploymentDurationInMinutes + strategy.FinalBakeTimeInMinutes) * 60;

    for (const monitor of environment.Properties.Monitors as Array<{
      AlarmArn: { 'Fn::GetAtt': [string, string] };
    }>) {
      const alarm = alarms[monitor.AlarmArn['Fn::GetAtt'][0]].Properties;
      const stat = (alarm.Metrics ?? []).find(
        (m: { MetricStat?: { Period: number } }) => m.MetricStat,
      ) as { MetricStat: { Period: number } } | undefined;
      const period = (alarm.Period ?? stat?.MetricStat.Period) as number;
      expect(period).toBe(60);
      // Its whole evaluation range, after the version reached every instance.
      expect(alarm.EvaluationPeriods * period).toBeLessThanOrEqual(
        strategy.FinalBakeTimeInMinutes * 60 - 120,
      );
      expect(watchedSeconds).toBeGreaterThan(alarm.EvaluationPeriods * period);
    }
  });

  it.each([300, 900, 3600])(
    'regression: with policyMaxAgeSeconds %i, still watches until the last instances have vended with the version',
    (maxAge) => {
      // The bake was 5 minutes whatever the max age: instances that fetch the
      // version up to an hour later were never watched.
      const { template: other } = synth(stage({ policyMaxAgeSeconds: maxAge }));
      const [strategy] = Object.values(other.findResources('AWS::AppConfig::DeploymentStrategy'));
      const bake = (strategy?.Properties as { FinalBakeTimeInMinutes?: number } | undefined)
        ?.FinalBakeTimeInMinutes;

      // The max age, the slowest watch's 3 minutes, a minute for the metrics.
      expect(bake).toBe(Math.ceil(maxAge / 60) + 3 + 1);
    },
  );

  it('deploys versions gradually, half then all over 2 minutes, watched 5 more', () => {
    template.hasResourceProperties('AWS::AppConfig::DeploymentStrategy', {
      Name: 'token-vending-example-policy',
      GrowthType: 'LINEAR',
      GrowthFactor: 50,
      DeploymentDurationInMinutes: 2,
      FinalBakeTimeInMinutes: 5,
      ReplicateTo: 'NONE',
    });
  });

  it("deploys the stage's policy as the first version with that strategy", () => {
    template.hasResourceProperties('AWS::AppConfig::Deployment', {
      ApplicationId: { Ref: only('AWS::AppConfig::Application') },
      EnvironmentId: { Ref: only('AWS::AppConfig::Environment') },
      ConfigurationProfileId: { Ref: only('AWS::AppConfig::ConfigurationProfile') },
      DeploymentStrategyId: { Ref: only('AWS::AppConfig::DeploymentStrategy') },
      ConfigurationVersion: { Ref: only('AWS::AppConfig::HostedConfigurationVersion') },
    });
  });

  it('regression: the first deployment waits until AppConfig may invoke the validator', () => {
    const deployment = template.toJSON().Resources[only('AWS::AppConfig::Deployment')];

    expect(deployment.DependsOn).toContain(permissionId());
  });

  it('regression: sets each new rollback watch OK before a deployment starts, which AppConfig would roll back on its INSUFFICIENT_DATA', () => {
    // A new alarm is INSUFFICIENT_DATA until first evaluated, and AppConfig
    // rolls back on that state too: the stack's first deployment, on a new
    // stage the only policy version, would be undone before any data came.
    const resources = template.toJSON().Resources;
    const environment = resources[only('AWS::AppConfig::Environment')];
    const watches = (
      environment.Properties.Monitors as Array<{ AlarmArn: { 'Fn::GetAtt': [string] } }>
    ).map((monitor) => monitor.AlarmArn['Fn::GetAtt'][0]);
    const settles = template.findResources('Custom::PolicyWatchStartsOk');
    const deployment = resources[only('AWS::AppConfig::Deployment')];

    expect(watches).toHaveLength(3);
    for (const watch of watches) {
      const [id, settle] = Object.entries(settles).find(([, r]) =>
        resolveValue(template, r.Properties.Create).includes(
          `"AlarmName":"${watch.toLowerCase()}-physical-name"`,
        ),
      ) ?? [undefined, undefined];
      if (!settle) throw new Error(`no call sets ${watch} OK`);
      for (const phase of ['Create', 'Update']) {
        expect(JSON.parse(resolveValue(template, settle.Properties[phase]))).toMatchObject({
          action: 'SetAlarmState',
          parameters: { AlarmName: `${watch.toLowerCase()}-physical-name`, StateValue: 'OK' },
        });
      }
      expect(settle.DependsOn).toContain(watch);
      expect(deployment.DependsOn).toContain(id);
    }
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: [
          {
            Effect: 'Allow',
            Action: 'cloudwatch:SetAlarmState',
            Resource: { 'Fn::GetAtt': [watches[0], 'Arn'] },
          },
        ],
      },
    });
  });

  it('gives operators the ids to deploy new versions with', () => {
    const outputs = template.toJSON().Outputs;
    expect(outputs.PolicyApplicationId.Value).toEqual({ Ref: only('AWS::AppConfig::Application') });
    expect(outputs.PolicyEnvironmentId.Value).toEqual({ Ref: only('AWS::AppConfig::Environment') });
    expect(outputs.PolicyProfileId.Value).toEqual({
      Ref: only('AWS::AppConfig::ConfigurationProfile'),
    });
    expect(outputs.PolicyDeploymentStrategyId.Value).toEqual({
      Ref: only('AWS::AppConfig::DeploymentStrategy'),
    });
    expect(outputs.PolicyStackVersion.Value).toEqual({
      'Fn::GetAtt': [only('AWS::AppConfig::HostedConfigurationVersion'), 'VersionNumber'],
    });
  });
});

describe('the access policy when a stage is removed', () => {
  // AppConfig refuses to delete a profile that still holds hosted versions,
  // and operators add versions the stack never knows of.
  const HELD = [
    'AWS::AppConfig::Application',
    'AWS::AppConfig::Environment',
    'AWS::AppConfig::ConfigurationProfile',
    'AWS::AppConfig::HostedConfigurationVersion',
  ];
  const policies = (template: Template) =>
    Object.fromEntries(
      Object.values(template.toJSON().Resources as Record<string, Record<string, string>>)
        .filter((r) => String(r.Type).startsWith('AWS::AppConfig::'))
        .map((r) => [r.Type, [r.DeletionPolicy ?? 'Delete', r.UpdateReplacePolicy ?? 'Delete']]),
    );

  it('keeps the application, environment, profile and versions of a stage that is kept', () => {
    expect(policies(synth().template)).toEqual({
      ...Object.fromEntries(HELD.map((type) => [type, ['Retain', 'Retain']])),
      // Nothing to keep, and nothing refuses their deletion.
      'AWS::AppConfig::DeploymentStrategy': ['Delete', 'Delete'],
      'AWS::AppConfig::Deployment': ['Delete', 'Delete'],
    });
  });

  it('deletes all of it with a throwaway stage, past deletion protection', () => {
    const { template } = synth(stage({ throwaway: true, terminationProtection: undefined }));

    expect(policies(template)).toEqual({
      ...Object.fromEntries(HELD.map((type) => [type, ['Delete', 'Delete']])),
      'AWS::AppConfig::DeploymentStrategy': ['Delete', 'Delete'],
      'AWS::AppConfig::Deployment': ['Delete', 'Delete'],
    });
    for (const type of ['AWS::AppConfig::Environment', 'AWS::AppConfig::ConfigurationProfile']) {
      template.hasResourceProperties(type, { DeletionProtectionCheck: 'BYPASS' });
    }
  });
});
