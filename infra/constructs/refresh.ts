import { Duration } from 'aws-cdk-lib';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { TOKEN_INDEX } from '../../functions/adapters/table-indexes.js';
import type { StageConfig } from '../config.js';
import type { CredentialsSecret } from './credentials-secret.js';
import { ScheduledInvocation } from './scheduling.js';
import type { TokenCache } from './token-cache.js';
import { TokenVendingFunction } from './token-vending-function.js';
import type { Vend } from './vend.js';

/** The schedule's period; the function is told the same (REFRESH_INTERVAL_SECONDS). */
export const REFRESH_INTERVAL = Duration.minutes(5);
/** A scope vended within this window counts as in use (the admin status uses it too). */
export const IN_USE_WINDOW_SECONDS = 3600;

export interface RefreshProps {
  readonly config: StageConfig;
  readonly cache: TokenCache;
  readonly credentials: CredentialsSecret;
  readonly vend: Vend;
  readonly deadLetterQueue: sqs.IQueue;
  readonly logRetention: logs.RetentionDays;
}

/**
 * The scheduled refresh: every 5 minutes it refreshes the in-use scopes whose
 * tokens are inside the refresh-ahead window, under the vend path's lease, so
 * callers almost never wait on the provider. The admin function invokes it for
 * a forced refresh of one scope. Same table, key, secret and settings as vend.
 */
export class Refresh extends Construct {
  readonly fn: TokenVendingFunction;
  readonly scheduled: ScheduledInvocation;

  constructor(scope: Construct, id: string, props: RefreshProps) {
    super(scope, id);
    this.fn = new TokenVendingFunction(this, 'Refresh', {
      stage: props.config.stage,
      destroyLogsWithStack: props.config.throwaway,
      name: 'refresh',
      description:
        'Refreshes in-use cached tokens ahead of expiry (every 5 minutes, and on admin request)',
      // 4 minutes, under the 5-minute period, so scheduled runs never overlap;
      // a run refreshes 4 scopes at a time in about a second each, and starts
      // none in the last 30 s (refreshStartDeadline): the rest is "deferred".
      timeout: Duration.minutes(4),
      memorySize: 512,
      // Unreserved unless the stage sets it (2: one scheduled run and one
      // operator's forced refresh at a time). Without it, overlapping runs
      // still refresh each scope once: they take the vend path's lease.
      reservedConcurrentExecutions: props.config.reservedConcurrency.refresh,
      logRetention: props.logRetention,
      environment: {
        ...props.vend.sharedEnvironment,
        IN_USE_WINDOW_SECONDS: String(IN_USE_WINDOW_SECONDS),
        REFRESH_INTERVAL_SECONDS: String(REFRESH_INTERVAL.toSeconds()),
      },
    });
    props.cache.connectTable(this.fn, {
      items: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
      prefix: 'TOKEN#',
      // The scheduled run lists the cached scopes from the token index.
      list: [TOKEN_INDEX],
    });
    props.cache.connectSealer(this.fn, 'TOKEN#', 'encrypt');
    props.credentials.connect(this.fn);

    this.scheduled = new ScheduledInvocation(this, 'Every5Minutes', {
      function: this.fn,
      schedule: scheduler.ScheduleExpression.rate(REFRESH_INTERVAL),
      description: `Scheduled refresh of in-use tokens (${props.config.stage})`,
      input: {},
      deadLetterQueue: props.deadLetterQueue,
      deliveryRetries: 3,
      // One retry of a failed run; after 4 minutes the next run supersedes it.
      runRetries: 1,
      maxEventAge: Duration.minutes(4),
    });
  }
}
