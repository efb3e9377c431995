import { CfnOutput, type CfnResource, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as appconfig from 'aws-cdk-lib/aws-appconfig';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as cr from 'aws-cdk-lib/custom-resources';
import { Construct } from 'constructs';
import { acknowledgeWildcardResource } from '../nag.js';
import { deployTimeCall } from './deploy-time-calls.js';
import { TokenVendingFunction } from './token-vending-function.js';

/** The longest final bake time AppConfig takes, in minutes ("FinalBakeTimeInMinutes ... Maximum value of 1440", AppConfig API Reference, DeploymentStrategy). */
const APPCONFIG_MAX_BAKE_MINUTES = 1440;
/** The configuration profile's name; `tvm policy` and the docs use it. */
export const POLICY_PROFILE_NAME = 'access-policy';

export interface AccessPolicyConfigProps {
  readonly stage: string;
  /** The first version's document (JSON text): the stage's policy and key-issuing ids. */
  readonly initialDocument: string;
  /** A fetched policy is used at most this long by every function. */
  readonly maxAgeSeconds: number;
  /** Alarms that roll a policy deployment back when they fire during it. */
  readonly rollbackAlarms: readonly cloudwatch.IAlarm[];
  /**
   * The longest any of `rollbackAlarms` needs to fire (its evaluation
   * periods): a deployment is watched at least that long after it completes,
   * so a version that breaks vends can still be rolled back.
   */
  readonly rollbackWatch: Duration;
  readonly logRetention: logs.RetentionDays;
  /**
   * A throwaway stage: destroy the validator's log group and the policy's
   * application, environment, profile and first version with the stack, and
   * skip AppConfig's deletion protection check, so the stack deletes whole.
   * Otherwise all of these are kept.
   */
  readonly throwaway: boolean;
}

/**
 * The access policy as AWS AppConfig hosted configuration (up to 1 MB), so
 * scopes, grants and key-issuing ids change without a deploy: versions, a
 * Lambda validator that runs the functions' own check before a version can
 * deploy, a gradual deployment strategy, and rollback when an alarm fires
 * during a deployment. The stack deploys the stage's policy as the first
 * version; operators deploy later versions through AppConfig.
 */
export class AccessPolicyConfig extends Construct {
  readonly application: appconfig.Application;
  readonly environment: appconfig.Environment;
  readonly profile: appconfig.HostedConfiguration;
  readonly strategy: appconfig.DeploymentStrategy;
  readonly validator: TokenVendingFunction;
  readonly #maxAgeSeconds: number;

  constructor(scope: Construct, id: string, props: AccessPolicyConfigProps) {
    super(scope, id);
    this.#maxAgeSeconds = props.maxAgeSeconds;
    const prefix = `token-vending-${props.stage}`;
    this.application = new appconfig.Application(this, 'Application', {
      applicationName: prefix,
      description: 'Token vending: the access policy (scopes, grants, key-issuing ids)',
    });
    // AppConfig reads the alarms' state during a deployment with this role.
    const alarmRole = new iam.Role(this, 'AlarmRole', {
      assumedBy: new iam.ServicePrincipal('appconfig.amazonaws.com'),
      description: `${prefix}: AppConfig watches the policy rollback alarms`,
      inlinePolicies: {
        DescribeAlarms: new iam.PolicyDocument({
          statements: [
            new iam.PolicyStatement({ actions: ['cloudwatch:DescribeAlarms'], resources: ['*'] }),
          ],
        }),
      },
    });
    acknowledgeWildcardResource(
      alarmRole,
      '*',
      'AppConfig reads alarm state with cloudwatch:DescribeAlarms, which its guide grants on all resources ("Configure permissions for automatic rollback", AWS AppConfig User Guide); the action only reads alarm metadata, and only AppConfig can assume this role.',
    );
    this.environment = new appconfig.Environment(this, 'Environment', {
      application: this.application,
      environmentName: props.stage,
      description: `The ${props.stage} stage's functions`,
      ...(props.throwaway
        ? { deletionProtectionCheck: appconfig.DeletionProtectionCheck.BYPASS }
        : {}),
      monitors: props.rollbackAlarms.map((alarm) =>
        appconfig.Monitor.fromCloudWatchAlarm(alarm, alarmRole),
      ),
    });
    // Gradual, so an alarm can stop a bad version before every instance has
    // it; an urgent revocation can be deployed with AppConfig.AllAtOnce.
    // Watched long enough for a rollback alarm to fire on what the last
    // instances do with the version: they fetch it within their cache's max
    // age (POLICY_MAX_AGE_SECONDS), vend with it, and the slowest alarm needs
    // its evaluation periods, plus a minute for the metrics to arrive.
    const bakeMinutes = Math.min(
      APPCONFIG_MAX_BAKE_MINUTES,
      Math.max(5, Math.ceil(props.maxAgeSeconds / 60) + props.rollbackWatch.toMinutes() + 1),
    );
    this.strategy = new appconfig.DeploymentStrategy(this, 'Strategy', {
      deploymentStrategyName: `${prefix}-policy`,
      description: `Access policy: half the fetches, then all, over 2 minutes; ${bakeMinutes} minutes watched`,
      rolloutStrategy: appconfig.RolloutStrategy.linear({
        growthFactor: 50,
        deploymentDuration: Duration.minutes(2),
        finalBakeTime: Duration.minutes(bakeMinutes),
      }),
    });
    this.validator = new TokenVendingFunction(this, 'Validator', {
      stage: props.stage,
      name: 'policy-validator',
      destroyLogsWithStack: props.throwaway,
      description: "Validates access policy versions with the functions' own check",
      timeout: Duration.seconds(30),
      // A 1 MB document parses in well under a second at this size.
      memorySize: 512,
      logRetention: props.logRetention,
    });
    // AppConfig invokes the validator as its service principal ("You must
    // provide appconfig.amazonaws.com permissions to invoke your Lambda",
    // AWS AppConfig User Guide, "About validators"), as CDK's own
    // LambdaValidator.fromFunction grants it. No SourceAccount or SourceArn
    // condition: AppConfig documents neither for validator calls, and a key it
    // does not send would deny every validation and so block every policy
    // deployment. What an outside caller could do through AppConfig is run the
    // check on a document of its own and learn pass or fail: the validator
    // reads nothing of ours and returns no data.
    this.validator.live.addPermission('AppConfigValidates', {
      principal: new iam.ServicePrincipal('appconfig.amazonaws.com'),
      action: 'lambda:InvokeFunction',
    });
    this.profile = new appconfig.HostedConfiguration(this, 'Profile', {
      application: this.application,
      name: POLICY_PROFILE_NAME,
      description: 'Who may have which scope; the key-issuing job ids',
      type: appconfig.ConfigurationType.FREEFORM,
      content: appconfig.ConfigurationContent.fromInlineJson(props.initialDocument),
      // The validator's `live` alias, as every invocation of ours.
      validators: [
        { type: appconfig.ValidatorType.LAMBDA, content: this.validator.live.functionArn },
      ],
      deploymentStrategy: this.strategy,
      deployTo: [this.environment],
      ...(props.throwaway
        ? { deletionProtectionCheck: appconfig.DeletionProtectionCheck.BYPASS }
        : {}),
    });
    // AppConfig refuses to delete a configuration profile that still holds
    // hosted versions ("Cannot delete configuration profile ... because there
    // are still hosted configuration versions existing under it": aws-cdk
    // issue 26804), and operators add versions the stack never knows about.
    // A stage that is kept: the policy's application, environment, profile and
    // every version stay when the stack goes, so `cdk destroy` succeeds and
    // the history survives; docs/deploying.md ("Remove a stage") deletes them
    // afterwards, versions first. A throwaway stage: all go with the stack,
    // once the versions operators added are deleted (the same section).
    // The first deployment runs the validator: it must not start before
    // AppConfig may invoke it (CloudFormation would otherwise create the two
    // side by side, and a deployment that wins the race fails validation).
    const mayValidate = this.validator.live.node.findChild('AppConfigValidates');
    // A new alarm is INSUFFICIENT_DATA until CloudWatch first evaluates it
    // ("usually within a few minutes", AWS re:Post Knowledge Center, "Why is my
    // CloudWatch alarm in the INSUFFICIENT_DATA state?"), and AppConfig rolls
    // a deployment back when a monitor is in ALARM or INSUFFICIENT_DATA
    // ("Monitoring deployments for automatic rollback", AWS AppConfig User
    // Guide). An update that creates a watch and deploys a policy version
    // would roll that version back for a state no data set: on a new stage,
    // the only version, so every vend would be refused. So a watch is set OK
    // as it is created (SetAlarmState: "the alarm state returns to its actual
    // state" at its next evaluation, which, missing data not breaching, is OK
    // unless it fires), before any deployment starts.
    const watchesSettled = props.rollbackAlarms.map((alarm) => {
      const setOk: cr.AwsSdkCall = {
        service: '@aws-sdk/client-cloudwatch',
        action: 'SetAlarmState',
        parameters: {
          AlarmName: alarm.alarmName,
          StateValue: 'OK',
          StateReason:
            'Created by the stack: OK until its first evaluation, so no policy deployment is rolled back for a state no data set.',
        },
        physicalResourceId: cr.PhysicalResourceId.of(alarm.alarmName),
      };
      const call = deployTimeCall(this, `${alarm.node.id}StartsOk`, {
        resourceType: 'Custom::PolicyWatchStartsOk',
        onCreate: setOk,
        // A watch renamed is a watch created.
        onUpdate: setOk,
        statements: [
          new iam.PolicyStatement({
            actions: ['cloudwatch:SetAlarmState'],
            resources: [alarm.alarmArn],
          }),
        ],
        logRetention: props.logRetention,
      });
      call.node.addDependency(alarm);
      return call;
    });
    for (const child of this.profile.node.children) {
      if (child instanceof appconfig.CfnDeployment) {
        child.node.addDependency(mayValidate, ...watchesSettled);
      }
    }
    const removal = props.throwaway ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN;
    this.application.applyRemovalPolicy(removal);
    this.environment.applyRemovalPolicy(removal);
    const profile = this.profile.node.findChild('ConfigurationProfile') as CfnResource;
    const firstVersion = this.profile.node.findChild(
      'Resource',
    ) as appconfig.CfnHostedConfigurationVersion;
    profile.applyRemovalPolicy(removal);
    firstVersion.applyRemovalPolicy(removal);

    const outputs: Record<string, [string, string]> = {
      PolicyApplicationId: [
        this.application.applicationId,
        'AppConfig application of the access policy',
      ],
      PolicyEnvironmentId: [
        this.environment.environmentId,
        'AppConfig environment the functions read',
      ],
      PolicyProfileId: [
        this.profile.configurationProfileId,
        'AppConfig configuration profile: access-policy',
      ],
      PolicyDeploymentStrategyId: [
        this.strategy.deploymentStrategyId,
        'The gradual deployment strategy for policy versions',
      ],
      PolicyStackVersion: [
        firstVersion.attrVersionNumber,
        "The hosted policy version the stack deployed (a throwaway stage's destroy deletes it)",
      ],
    };
    for (const [key, [value, description]] of Object.entries(outputs)) {
      new CfnOutput(this, key, { key, value, description });
    }
  }

  /**
   * Sets where the function reads the policy (POLICY_APPCONFIG_*, and
   * POLICY_MAX_AGE_SECONDS) and grants exactly the two AppConfig data calls on
   * this one configuration.
   */
  connect(fn: TokenVendingFunction): void {
    fn.addEnvironment('POLICY_APPCONFIG_APPLICATION', this.application.applicationId);
    fn.addEnvironment('POLICY_APPCONFIG_ENVIRONMENT', this.environment.environmentId);
    fn.addEnvironment('POLICY_APPCONFIG_PROFILE', this.profile.configurationProfileId);
    fn.addEnvironment('POLICY_MAX_AGE_SECONDS', String(this.#maxAgeSeconds));
    const { account, region, partition } = Stack.of(this);
    fn.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'ReadAccessPolicy',
        actions: ['appconfig:GetLatestConfiguration', 'appconfig:StartConfigurationSession'],
        // The configuration resource (Service Authorization Reference, AWS AppConfig).
        resources: [
          `arn:${partition}:appconfig:${region}:${account}:application/${this.application.applicationId}/environment/${this.environment.environmentId}/configuration/${this.profile.configurationProfileId}`,
        ],
      }),
    );
  }
}
