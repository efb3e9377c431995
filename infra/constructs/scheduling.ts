import { Duration, Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { SqsDestination } from 'aws-cdk-lib/aws-lambda-destinations';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { TokenVendingFunction } from './token-vending-function.js';

/**
 * Where scheduled runs end up when they fail for good: schedule deliveries
 * that ran out of retries (EventBridge Scheduler's dead-letter events) and
 * runs that failed after Lambda's own retries (the function's on-failure
 * destination). Messages hold the event and the error message, never a token
 * or key (the functions' errors name ids and codes only), so SQS-managed
 * encryption suffices; TLS is enforced by the queue policy.
 */
export class FailedRunsQueue extends Construct {
  readonly queue: sqs.Queue;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.queue = new sqs.Queue(this, 'Queue', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    Validations.of(this.queue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        "This queue is itself the dead-letter queue: of both schedules (Scheduler DeadLetterConfig) and of the scheduled functions' asynchronous invocations (on-failure destination). Nothing consumes it automatically; operators read it (docs/operations.md, alarm failed-runs) and the failed-runs alarm watches its depth, so a further DLQ would only hold the same messages again.",
    });
  }
}

export interface ScheduledInvocationProps {
  readonly function: TokenVendingFunction;
  readonly schedule: scheduler.ScheduleExpression;
  readonly description: string;
  /** The event each run receives. */
  readonly input: Record<string, unknown>;
  readonly deadLetterQueue: sqs.IQueue;
  /** Scheduler's retries of a delivery Lambda refused (throttled, unavailable) ... */
  readonly deliveryRetries: number;
  /** ... and Lambda's retries of a run that failed; both give up after `maxEventAge`. */
  readonly runRetries: number;
  readonly maxEventAge: Duration;
}

/**
 * An EventBridge Scheduler schedule that invokes one function. Scheduler
 * invokes Lambda asynchronously: its retry policy and dead-letter queue cover
 * the delivery, and the function's asynchronous invocation settings cover the
 * run (a run that throws is retried by Lambda, then sent to the same queue).
 * The schedule invokes the function's `live` alias; its role may invoke that
 * alias (nothing else) and send to the queue, and only Scheduler of this
 * account assumes it.
 */
export class ScheduledInvocation extends Construct {
  readonly schedule: scheduler.Schedule;
  readonly role: iam.Role;

  constructor(scope: Construct, id: string, props: ScheduledInvocationProps) {
    super(scope, id);
    const fn = props.function.live;
    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(this).account } },
      }),
      description: `Scheduler: invokes ${props.function.functionName} only`,
    });
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'InvokeTheTarget',
        actions: ['lambda:InvokeFunction'],
        resources: [fn.functionArn],
      }),
    );
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'DeadLetters',
        actions: ['sqs:SendMessage'],
        resources: [props.deadLetterQueue.queueArn],
      }),
    );

    const role = this.role;
    const target: scheduler.IScheduleTarget = {
      bind: () => ({
        arn: fn.functionArn,
        role,
        input: scheduler.ScheduleTargetInput.fromObject(props.input),
        retryPolicy: {
          maximumRetryAttempts: props.deliveryRetries,
          maximumEventAgeInSeconds: props.maxEventAge.toSeconds(),
        },
        deadLetterConfig: { arn: props.deadLetterQueue.queueArn },
      }),
    };
    this.schedule = new scheduler.Schedule(this, 'Schedule', {
      schedule: props.schedule,
      target,
      description: props.description,
      timeWindow: scheduler.TimeWindow.off(),
    });

    fn.configureAsyncInvoke({
      retryAttempts: props.runRetries,
      maxEventAge: props.maxEventAge,
      onFailure: new SqsDestination(props.deadLetterQueue),
    });
  }
}
