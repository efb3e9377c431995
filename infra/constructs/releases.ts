import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as codedeploy from 'aws-cdk-lib/aws-codedeploy';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { acknowledgeWildcardResource } from '../nag.js';
import type { VendDeployment } from '../stage-release.js';
import { NAMESPACE } from './observability.js';
import type { TokenVendingFunction } from './token-vending-function.js';

const CONFIGS: Record<VendDeployment, codedeploy.ILambdaDeploymentConfig> = {
  Canary10Percent5Minutes: codedeploy.LambdaDeploymentConfig.CANARY_10PERCENT_5MINUTES,
  Canary10Percent10Minutes: codedeploy.LambdaDeploymentConfig.CANARY_10PERCENT_10MINUTES,
  Canary10Percent15Minutes: codedeploy.LambdaDeploymentConfig.CANARY_10PERCENT_15MINUTES,
  Canary10Percent30Minutes: codedeploy.LambdaDeploymentConfig.CANARY_10PERCENT_30MINUTES,
  Linear10PercentEvery1Minute: codedeploy.LambdaDeploymentConfig.LINEAR_10PERCENT_EVERY_1MINUTE,
  Linear10PercentEvery2Minutes: codedeploy.LambdaDeploymentConfig.LINEAR_10PERCENT_EVERY_2MINUTES,
  Linear10PercentEvery3Minutes: codedeploy.LambdaDeploymentConfig.LINEAR_10PERCENT_EVERY_3MINUTES,
  Linear10PercentEvery10Minutes: codedeploy.LambdaDeploymentConfig.LINEAR_10PERCENT_EVERY_10MINUTES,
  AllAtOnce: codedeploy.LambdaDeploymentConfig.ALL_AT_ONCE,
};

export interface ReleasesProps {
  readonly stage: string;
  readonly vend: TokenVendingFunction;
  /** The other functions, each with the alarms that roll its release back. */
  readonly others: ReadonlyArray<{ fn: TokenVendingFunction; alarms: cloudwatch.IAlarm[] }>;
  readonly vendDeployment: VendDeployment;
  readonly vendLatencyP99AlarmMs: number;
}

/**
 * Releases through CodeDeploy: each deploy publishes new versions, and
 * CodeDeploy moves each function's `live` alias to its new version. Vend's
 * traffic shifts gradually (canary by default) and rolls back by itself when
 * a release alarm fires during the shift; the others move at once, watched by
 * their error alarms. The release alarms judge one-minute periods, so a canary
 * of a few minutes sees them fire; they roll back, and page nobody (the
 * stage's paging alarms judge the same signals over longer periods).
 */
export class Releases extends Construct {
  readonly application: codedeploy.LambdaApplication;
  readonly vendGroup: codedeploy.LambdaDeploymentGroup;
  readonly groups: codedeploy.LambdaDeploymentGroup[] = [];
  readonly vendAlarms: cloudwatch.Alarm[];
  /** The role CodeDeploy acts as: it moves the aliases (the guardrails let it change vend). */
  readonly role: iam.Role;

  constructor(scope: Construct, id: string, props: ReleasesProps) {
    super(scope, id);
    const prefix = `token-vending-${props.stage}`;
    this.application = new codedeploy.LambdaApplication(this, 'Application', {
      applicationName: prefix,
    });
    const functions = [props.vend, ...props.others.map((o) => o.fn)];
    // Our own role instead of CDK's AWS managed AWSCodeDeployRoleForLambdaLimited:
    // its Lambda actions on these aliases only (that policy grants them on *), and
    // DescribeAlarms, which it grants on * too. No hooks, no S3 AppSpecs here.
    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('codedeploy.amazonaws.com'),
      description: `${prefix}: CodeDeploy moves the functions' live aliases`,
      inlinePolicies: {
        MoveLiveAliases: new iam.PolicyDocument({
          statements: [
            new iam.PolicyStatement({
              actions: [
                'lambda:GetAlias',
                'lambda:GetProvisionedConcurrencyConfig',
                'lambda:UpdateAlias',
              ],
              resources: functions.map((fn) => fn.live.functionArn),
            }),
            new iam.PolicyStatement({ actions: ['cloudwatch:DescribeAlarms'], resources: ['*'] }),
          ],
        }),
      },
    });
    acknowledgeWildcardResource(
      this.role,
      '*',
      'CodeDeploy reads the release alarms with cloudwatch:DescribeAlarms, which AWSCodeDeployRoleForLambdaLimited (the policy AWS documents for this role) grants on all resources; it only reads alarm state, and only CodeDeploy can assume this role.',
    );
    // Imported immutable: CDK would otherwise attach the AWS managed policy to it.
    const role = iam.Role.fromRoleArn(this, 'RoleRef', this.role.roleArn, { mutable: false });

    const vendMetric = (metricName: string, statistic: string, namespace = 'AWS/Lambda') =>
      new cloudwatch.Metric({
        namespace,
        metricName,
        dimensionsMap:
          namespace === 'AWS/Lambda'
            ? { FunctionName: props.vend.functionName }
            : { service: 'vend-token' },
        statistic,
        period: Duration.minutes(1),
      });
    const releaseAlarm = (name: string, description: string, props: cloudwatch.AlarmProps) =>
      new cloudwatch.Alarm(this, name, {
        ...props,
        alarmName: `${prefix}-${name}`,
        alarmDescription: `${description} Rolls a vend release back; pages nobody.`,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    this.vendAlarms = [
      releaseAlarm('vend-release-5xx', 'The vend URL answered 5xx 5 or more times in a minute.', {
        metric: vendMetric('Url5xxCount', 'Sum'),
        threshold: 5,
        evaluationPeriods: 1,
      }),
      releaseAlarm('vend-release-errors', 'The vend function failed an invocation.', {
        metric: vendMetric('Errors', 'Sum'),
        threshold: 1,
        evaluationPeriods: 1,
      }),
      releaseAlarm(
        'vend-release-latency',
        `Vend latency p99 was over ${props.vendLatencyP99AlarmMs} ms in 2 of the last 3 minutes.`,
        {
          metric: vendMetric('VendLatency', 'p99', NAMESPACE),
          threshold: props.vendLatencyP99AlarmMs,
          evaluationPeriods: 3,
          datapointsToAlarm: 2,
        },
      ),
    ];

    const group = (
      name: string,
      fn: TokenVendingFunction,
      config: codedeploy.ILambdaDeploymentConfig,
      alarms: cloudwatch.IAlarm[],
    ) => {
      const created = new codedeploy.LambdaDeploymentGroup(this, name, {
        application: this.application,
        deploymentGroupName: fn.functionName,
        alias: fn.live,
        deploymentConfig: config,
        alarms,
        role,
        autoRollback: {
          failedDeployment: true,
          stoppedDeployment: true,
          deploymentInAlarm: alarms.length > 0,
        },
      });
      this.groups.push(created);
      return created;
    };
    this.vendGroup = group('Vend', props.vend, CONFIGS[props.vendDeployment], this.vendAlarms);
    for (const { fn, alarms } of props.others) {
      group(fn.functionName.slice(prefix.length + 1), fn, CONFIGS.AllAtOnce, alarms);
    }
  }
}
