/**
 * The access policy as AppConfig configuration: application, environment with
 * rollback alarms, hosted profile with the Lambda validator, a gradual
 * deployment strategy, and the first version deployed by the stack.
 */
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { aliasId, synth } from '../support/infra.js';

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

  it('rolls a deployment back when the policy-rejected, URL 5xx or internal-error alarm fires', () => {
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
      ['policy-rejected', 'vend-url-5xx', 'vend-internal-errors'].map((name) => ({
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
  });
});
