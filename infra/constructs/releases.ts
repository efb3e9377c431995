import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as codedeploy from 'aws-cdk-lib/aws-codedeploy';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { acknowledgeWildcardResource } from '../nag.js';
import type { VendDeployment } from '../stage-release.js';
import {
  EXCUSED,
  EXCUSED_FAILURES,
  type ExcusedMetric,
  type ExcusingService,
  errorsLess,
  powertoolsMetric,
  vendInternalErrorsMetric,
} from './observability.js';
import type { TokenVendingFunction } from './token-vending-function.js';

/**
 * The failed invocations a release alarm leaves out: what the paging alarms
 * leave out (EXCUSED_FAILURES), except a key-issuing run failed for ids or a
 * refresh failed on the provider, which a broken release can cause (rolling
 * back costs nothing), while a refused request or the invoked function's
 * failure it cannot.
 */
export const RELEASE_EXCUSED: Record<ExcusingService, readonly ExcusedMetric[]> = {
  admin: EXCUSED_FAILURES.admin,
  'issue-keys': EXCUSED_FAILURES['issue-keys'].filter((m) => m !== 'KeyIssuingRunsFailed'),
  // A release's bug can make the provider refuse every request (upstream_error).
  refresh: [],
};

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
  /**
   * The other functions, each rolled back by an errors alarm of its own
   * release. `excusing`: the Powertools service whose RELEASE_EXCUSED
   * failures (an operator's typo or refused request, another function's
   * failure) the alarm leaves out.
   */
  readonly others: ReadonlyArray<{
    fn: TokenVendingFunction;
    excusing?: ExcusingService;
    /** Said in the alarm's description after what it counts. */
    note?: string;
  }>;
  readonly vendDeployment: VendDeployment;
  readonly vendLatencyP99AlarmMs: number;
}

/**
 * Releases through CodeDeploy: each deploy publishes new versions, and
 * CodeDeploy moves each function's `live` alias to its new version. Vend's
 * traffic shifts gradually (canary by default) and rolls back by itself when
 * a release alarm fires during the shift; the others move at once, each
 * watched by an errors alarm of its own. The release alarms judge one-minute
 * periods, so a canary of a few minutes sees them fire; they roll back, and
 * page nobody (the stage's paging alarms judge the same signals over five
 * minutes, too slow for a release).
 *
 * Every Lambda metric here is the `live` alias's (dimensions FunctionName and
 * Resource `<name>:live`): Lambda reports FunctionName alone as the aggregate
 * of every version and alias, and FunctionName with Resource for one version
 * or alias (AWS Lambda Developer Guide, "Working with Lambda function
 * metrics", docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics.html). While
 * a canary shifts, both versions serve callers through the alias, so its
 * metric is what callers get from the release, and direct invocations of
 * other qualifiers (a console test of $LATEST) stay out of it. This follows
 * the alias error alarm of "Deploying serverless applications gradually with
 * AWS SAM". Not the new version alone (ExecutedVersion): at a threshold of one
 * error its errors trip the alias alarm as well, and a version-bound alarm
 * would change with every deploy.
 */
export class Releases extends Construct {
  readonly application: codedeploy.LambdaApplication;
  readonly vendGroup: codedeploy.LambdaDeploymentGroup;
  readonly groups: codedeploy.LambdaDeploymentGroup[] = [];
  readonly vendAlarms: cloudwatch.Alarm[];
  /** The errors alarm of each other function's release, by function name. */
  readonly otherAlarms = new Map<string, cloudwatch.Alarm>();
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

    const liveMetric = (fn: TokenVendingFunction, metricName: string, statistic: string) =>
      new cloudwatch.Metric({
        namespace: 'AWS/Lambda',
        metricName,
        dimensionsMap: { FunctionName: fn.functionName, Resource: fn.liveName },
        statistic,
        period: Duration.minutes(1),
      });
    const releaseAlarm = (name: string, description: string, props: cloudwatch.AlarmProps) =>
      new cloudwatch.Alarm(this, name, {
        ...props,
        alarmName: `${prefix}-${name}`,
        alarmDescription: `${description} Rolls a release back; pages nobody.`,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    this.vendAlarms = [
      releaseAlarm('vend-release-5xx', 'The vend URL answered 5xx 5 or more times in a minute.', {
        // The URL's metric by FunctionName, as Lambda reports function URL metrics.
        metric: new cloudwatch.Metric({
          namespace: 'AWS/Lambda',
          metricName: 'Url5xxCount',
          dimensionsMap: { FunctionName: props.vend.functionName },
          statistic: 'Sum',
          period: Duration.minutes(1),
        }),
        threshold: 5,
        evaluationPeriods: 1,
      }),
      releaseAlarm('vend-release-errors', "An invocation of vend's live alias failed.", {
        metric: liveMetric(props.vend, 'Errors', 'Sum'),
        threshold: 1,
        evaluationPeriods: 1,
      }),
      // Vend answers a bug as 500 internal_error, a successful invocation: the
      // Errors metric misses it, and a canary's share of a few callers (who
      // keep their tokens for most of two hours) rarely makes five URL 5xx a
      // minute. One is a bug in the release (the provider's failures are
      // other codes), so one rolls it back.
      releaseAlarm(
        'vend-release-internal-errors',
        'Vend answered 500 internal_error (a bug: details in its log).',
        {
          metric: vendInternalErrorsMetric(Duration.minutes(1)),
          threshold: 1,
          evaluationPeriods: 1,
        },
      ),
      releaseAlarm(
        'vend-release-latency',
        `Vend latency p99 was over ${props.vendLatencyP99AlarmMs} ms in 2 of the last 3 minutes.`,
        {
          metric: powertoolsMetric('VendLatency', 'vend-token', {
            statistic: 'p99',
            period: Duration.minutes(1),
          }),
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
          deploymentInAlarm: true,
        },
      });
      this.groups.push(created);
      return created;
    };
    this.vendGroup = group('Vend', props.vend, CONFIGS[props.vendDeployment], this.vendAlarms);
    // One minute, one failed invocation: an AllAtOnce shift takes seconds,
    // and CodeDeploy reads the alarms only while it runs.
    for (const { fn, excusing, note } of props.others) {
      const short = fn.functionName.slice(prefix.length + 1);
      const errors = liveMetric(fn, 'Errors', 'Sum');
      const excused = excusing === undefined ? [] : RELEASE_EXCUSED[excusing];
      const alarm = releaseAlarm(
        `${short}-release-errors`,
        [
          `An invocation of ${fn.liveName} failed`,
          excused.length === 0
            ? ''
            : `, not counting ${excused.map((m) => EXCUSED[m].says).join(', ')}`,
          note === undefined ? '.' : ` (${note}).`,
        ].join(''),
        {
          metric:
            excusing === undefined
              ? errors
              : errorsLess(errors, excusing, excused, Duration.minutes(1), `${short} errors`),
          threshold: 1,
          evaluationPeriods: 1,
        },
      );
      this.otherAlarms.set(fn.functionName, alarm);
      group(short, fn, CONFIGS.AllAtOnce, [alarm]);
    }
  }
}
