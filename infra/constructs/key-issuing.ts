import { Annotations, ArnFormat, Duration, Stack, Token } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { keysSecretName } from '../../functions/adapters/secrets-manager-key-vault.js';
import type { StageConfig } from '../config.js';
import { acknowledgeWildcardResource } from '../nag.js';
import { ScheduledInvocation } from './scheduling.js';
import type { TokenCache } from './token-cache.js';
import { TokenVendingFunction } from './token-vending-function.js';

export interface KeyIssuingProps {
  readonly config: StageConfig;
  readonly cache: TokenCache;
  readonly deadLetterQueue: sqs.IQueue;
  readonly logRetention: logs.RetentionDays;
}

/**
 * The key-issuing job (docs/operations.md): on its schedule, or invoked with
 * `{"businessApplicationIds":[...],"force":true}`, it issues Basic Auth keys
 * and stores each answer as the secret `<prefix>/basic-auth/<id>`. It gets its
 * unscoped token from the vend URL, signed with its own role, which the vend
 * construct grants `unscoped` (call `useVendUrl`).
 */
export class KeyIssuing extends Construct {
  readonly fn: TokenVendingFunction;
  readonly scheduled: ScheduledInvocation;

  constructor(scope: Construct, id: string, props: KeyIssuingProps) {
    super(scope, id);
    const { config } = props;
    this.fn = new TokenVendingFunction(this, 'IssueKeys', {
      stage: config.stage,
      destroyLogsWithStack: config.throwaway,
      name: 'issue-keys',
      description:
        'Issues Basic Auth keys for business applications and stores them in Secrets Manager',
      // 10 minutes: the job starts no id in its last 145 s (the longest one id
      // can take, 130 s, and a margin), so a run of many ids ends cleanly and
      // the rest wait for the next.
      timeout: Duration.minutes(10),
      // 256 MB: a few sequential HTTPS calls per id; little CPU or memory.
      memorySize: 256,
      // Unreserved unless the stage sets it (1: one run at a time). Job
      // records keep two runs off one id either way.
      reservedConcurrentExecutions: config.reservedConcurrency.issueKeys,
      logRetention: props.logRetention,
      environment: {
        PROVIDER_BASE_URL: config.providerBaseUrl,
        SECRETS_PREFIX: config.secretsPrefix,
        ...(config.keyIssuing.requestBody === undefined
          ? {}
          : { KEY_ISSUE_REQUEST_BODY: config.keyIssuing.requestBody }),
      },
    });
    props.cache.connectTable(this.fn, {
      items: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
      prefix: 'KEYS#',
    });
    props.cache.connectSealer(this.fn, 'KEYS#', 'envelope');
    this.#grantKeySecrets(config.secretsPrefix);
    this.#grantReaders(config.stage, config.secretsPrefix, config.keyIssuing.readers);

    this.scheduled = new ScheduledInvocation(this, 'OnSchedule', {
      function: this.fn,
      schedule: scheduler.ScheduleExpression.expression(config.keyIssuing.schedule),
      description: `Key issuing for the configured business applications (${config.stage})`,
      input: {},
      deadLetterQueue: props.deadLetterQueue,
      deliveryRetries: 3,
      // The job is idempotent (one Idempotency-Key per id until stored): retries are safe.
      runRetries: 2,
      maxEventAge: Duration.hours(1),
    });
  }

  /**
   * Each reader role of the stage reads the keys of its business applications
   * only: GetSecretValue and DescribeSecret on `<prefix>/basic-auth/<id>`
   * (named as the vault names it: keysSecretName)
   * (and the six characters Secrets Manager adds), in a policy this stack
   * attaches to the role (a role of the stack's account). A reissue is a new
   * version of the same secret, so a reader that reads AWSCURRENT gets it.
   *
   * A policy attaches to a role by name, and a name says nothing of its
   * account: a reader of another account would grant the role of that name
   * in the stack's account instead. So the statement holds only for
   * principals of the reader's own account (`aws:PrincipalAccount`), and a
   * synth that knows the stack's account (a `cdk deploy`, which sets
   * CDK_DEFAULT_ACCOUNT, or a pinned `account`) refuses such a reader.
   */
  #grantReaders(
    stage: string,
    prefix: string,
    readers: StageConfig['keyIssuing']['readers'],
  ): void {
    const stack = Stack.of(this);
    readers.forEach((reader, index) => {
      const roleName = reader.role.split('/').at(-1) as string;
      const roleAccount = reader.role.split(':')[4] as string;
      if (!Token.isUnresolved(stack.account) && stack.account !== roleAccount) {
        Annotations.of(this).addError(
          `keyIssuing.readers[${index}].role ${reader.role} is a role of account ${roleAccount}, not of the stack's account ${stack.account}: the read policy would attach to the role ${roleName} of ${stack.account}`,
        );
      }
      new iam.CfnPolicy(this, `Reader${index}`, {
        policyName: `token-vending-${stage}-read-keys-${index}`,
        roles: [roleName],
        policyDocument: new iam.PolicyDocument({
          statements: [
            new iam.PolicyStatement({
              sid: 'ReadIssuedKeys',
              actions: ['secretsmanager:DescribeSecret', 'secretsmanager:GetSecretValue'],
              conditions: { StringEquals: { 'aws:PrincipalAccount': roleAccount } },
              resources: reader.businessApplicationIds.map((id) =>
                stack.formatArn({
                  service: 'secretsmanager',
                  resource: 'secret',
                  resourceName: `${keysSecretName(prefix, id)}-??????`,
                  arnFormat: ArnFormat.COLON_RESOURCE_NAME,
                }),
              ),
            }),
          ],
        }),
      });
    });
  }

  get role(): iam.IRole {
    return this.fn.role;
  }

  /** Sets VEND_URL: the job gets its unscoped token there, like any caller. */
  useVendUrl(url: string): void {
    this.fn.addEnvironment('VEND_URL', url);
  }

  /**
   * CreateSecret and PutSecretValue on `<prefix>/basic-auth/*` only
   * (functions/adapters/secrets-manager-key-vault.ts; no KmsKeyId is passed, so
   * the secrets use Secrets Manager's own key and need no KMS grant). No read.
   */
  #grantKeySecrets(prefix: string): void {
    const resource = Stack.of(this).formatArn({
      service: 'secretsmanager',
      resource: 'secret',
      resourceName: `${prefix}/basic-auth/*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    this.fn.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'WriteIssuedKeySecrets',
        // DescribeSecret (metadata, never the value): are an id's keys stored
        // though its job record is gone? Then the job does not issue over them.
        actions: [
          'secretsmanager:CreateSecret',
          'secretsmanager:DescribeSecret',
          'secretsmanager:PutSecretValue',
        ],
        resources: [resource],
      }),
    );
    acknowledgeWildcardResource(
      this.fn.role,
      resource,
      'The job creates one secret per business application, <prefix>/basic-auth/<id>, for ids named at run time (a manual run may name any id), and Secrets Manager appends a random suffix to each name; the wildcard covers exactly that name space under the stage prefix, for CreateSecret, DescribeSecret and PutSecretValue only (no read of a value, no list or delete).',
    );
  }
}
