import { CfnOutput, DefaultStackSynthesizer, Fn, Stack, type StackProps, Tags } from 'aws-cdk-lib';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import type { StageConfig } from './config.js';
import { AccessPolicyConfig } from './constructs/access-policy-config.js';
import { Admin } from './constructs/admin.js';
import { ConsoleTestEvents } from './constructs/console-test-events.js';
import { CredentialsSecret } from './constructs/credentials-secret.js';
import { bootstrapDeploymentRoleArn, Guardrails } from './constructs/guardrails.js';
import { KeyIssuing } from './constructs/key-issuing.js';
import { Observability } from './constructs/observability.js';
import { Refresh } from './constructs/refresh.js';
import { Releases } from './constructs/releases.js';
import { FailedRunsQueue } from './constructs/scheduling.js';
import { TokenCache } from './constructs/token-cache.js';
import { Vend } from './constructs/vend.js';

export interface TokenVendingStackProps extends StackProps {
  readonly config: StageConfig;
}

/** The whole service in one stack (docs/deploying.md): it composes the constructs and holds no logic. */
export class TokenVendingStack extends Stack {
  readonly cache: TokenCache;
  readonly vend: Vend;
  readonly refresh: Refresh;
  readonly keyIssuing: KeyIssuing;
  readonly admin: Admin;
  readonly observability: Observability;
  readonly guardrails: Guardrails;
  readonly policy: AccessPolicyConfig;
  readonly releases: Releases;

  constructor(scope: Construct, id: string, props: TokenVendingStackProps) {
    const named = props.config.access.deploymentRoleArn;
    super(scope, id, {
      ...props,
      terminationProtection: props.config.terminationProtection,
      // A stage that names its deployment role has `cdk deploy` hand
      // CloudFormation that role: the cache key's policy and the guardrails
      // trust it alone, so CloudFormation acting as the bootstrap's execution
      // role could neither create the key (KMS refuses a policy that does not
      // let its creator change it) nor, under the guardrails, the functions.
      ...(named === undefined
        ? {}
        : { synthesizer: new DefaultStackSynthesizer({ cloudFormationExecutionRole: named }) }),
    });
    const { config } = props;
    // On the stack and every resource that takes tags: cost allocation and
    // finding the stage's resources in the console.
    Tags.of(this).add('project', 'token-vending');
    Tags.of(this).add('stage', config.stage);
    const logRetention = config.logRetentionDays as logs.RetentionDays;

    const deploymentRoleArn = named ?? bootstrapDeploymentRoleArn(this);
    this.cache = new TokenCache(this, 'Cache', {
      stage: config.stage,
      throwaway: config.throwaway,
      deploymentRoleArn,
      keyAdministratorArns: config.access.keyAdministratorArns,
    });
    const credentials = new CredentialsSecret(this, 'Credentials', config.credentialsSecret);
    const failedRuns = new FailedRunsQueue(this, 'FailedRuns');

    this.keyIssuing = new KeyIssuing(this, 'KeyIssuing', {
      config,
      cache: this.cache,
      deadLetterQueue: failedRuns.queue,
      logRetention,
    });
    this.vend = new Vend(this, 'Vend', {
      config,
      cache: this.cache,
      credentials,
      keyIssuer: this.keyIssuing.role,
      logRetention,
    });
    this.keyIssuing.useVendUrl(this.vend.url.url);
    this.refresh = new Refresh(this, 'Refresh', {
      config,
      cache: this.cache,
      credentials,
      vend: this.vend,
      deadLetterQueue: failedRuns.queue,
      logRetention,
    });
    this.admin = new Admin(this, 'Admin', {
      config,
      cache: this.cache,
      refresh: this.refresh.fn,
      issueKeys: this.keyIssuing.fn,
      logRetention,
    });
    const functions = {
      vend: this.vend.fn,
      refresh: this.refresh.fn,
      issueKeys: this.keyIssuing.fn,
      admin: this.admin.fn,
    };
    this.observability = new Observability(this, 'Observability', {
      stage: config.stage,
      ...functions,
      failedRuns: failedRuns.queue,
      ...(config.alarmEmail === undefined ? {} : { alarmEmail: config.alarmEmail }),
    });
    this.policy = new AccessPolicyConfig(this, 'AccessPolicy', {
      stage: config.stage,
      initialDocument: this.vend.initialPolicyDocument,
      maxAgeSeconds: config.policyMaxAgeSeconds,
      rollbackAlarms: this.observability.policyRollbackAlarms,
      rollbackWatch: this.observability.policyRollbackWatch,
      logRetention,
      throwaway: config.throwaway,
    });
    for (const fn of Object.values(functions)) this.policy.connect(fn);
    this.releases = new Releases(this, 'Releases', {
      stage: config.stage,
      vend: this.vend.fn,
      others: [
        { fn: this.refresh.fn },
        { fn: this.keyIssuing.fn, excusing: 'issue-keys' },
        { fn: this.admin.fn, excusing: 'admin' },
        {
          fn: this.policy.validator,
          // functions/policy-validator/handler.ts: refusing is throwing.
          note: 'a policy version it refuses counts too, as AppConfig reads a function error as invalid',
        },
      ],
      vendDeployment: config.vendDeployment,
      vendLatencyP99AlarmMs: config.vendLatencyP99AlarmMs,
    });
    new ConsoleTestEvents(this, 'ConsoleTestEvents', { config, ...functions, logRetention });
    this.guardrails = new Guardrails(this, 'Guardrails', {
      stage: config.stage,
      vendFunctionName: this.vend.fn.functionName,
      functions: [...Object.values(functions), this.policy.validator].map((fn) => ({
        name: fn.functionName,
        roleArn: fn.role.roleArn,
      })),
      providerSecretArn: credentials.anyRegionArn,
      // CloudFormation deploys; CodeDeploy moves vend's live alias during a release.
      deploymentPrincipalArns: [deploymentRoleArn, this.releases.role.roleArn],
      accessPolicy: {
        applicationArn: this.policy.application.applicationArn,
        strategyArn: this.policy.strategy.deploymentStrategyArn,
        editorArns: config.access.policyEditorArns,
      },
    });

    new CfnOutput(this, 'VendUrl', {
      description: 'The vend Function URL (AuthType AWS_IAM): GET /token?scope=<scope>',
      value: this.vend.url.url,
    });
    new CfnOutput(this, 'TableName', {
      description: 'The token cache table',
      value: this.cache.table.tableName,
    });
    new CfnOutput(this, 'TableArn', {
      description: 'The token cache table (an export to S3 names it by ARN)',
      value: this.cache.table.tableArn,
    });
    new CfnOutput(this, 'CacheKeyArn', {
      description: 'The cache key (kept when the stack is deleted, unless throwaway)',
      value: this.cache.key.keyArn,
    });
    new CfnOutput(this, 'DashboardUrl', {
      description: 'The CloudWatch dashboard',
      value: this.observability.dashboardUrl,
    });
    new CfnOutput(this, 'AdminFunctionName', {
      description: "The admin function (console test events: open its alias 'live' first)",
      value: this.admin.fn.function.functionName,
    });
    new CfnOutput(this, 'AdminFunctionAlias', {
      description: 'What operators invoke: `tvm admin --function` (its live alias, as released)',
      value: this.admin.fn.liveName,
    });
    new CfnOutput(this, 'FunctionLogGroups', {
      description:
        "The functions' log groups, comma-separated (kept when the stack is deleted, unless throwaway)",
      value: Fn.join(
        ',',
        [...Object.values(functions), this.policy.validator].map((fn) => fn.logGroup.logGroupName),
      ),
    });
    new CfnOutput(this, 'AlarmTopicArn', {
      description: 'Subscribe paging here',
      value: this.observability.topic.topicArn,
    });
  }
}
