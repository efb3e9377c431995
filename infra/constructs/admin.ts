import { Duration } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { KEY_JOB_INDEX, TOKEN_INDEX } from '../../functions/adapters/table-indexes.js';
import type { StageConfig } from '../config.js';
import { IN_USE_WINDOW_SECONDS } from './refresh.js';
import type { TokenCache } from './token-cache.js';
import { TokenVendingFunction } from './token-vending-function.js';

export interface AdminProps {
  readonly config: StageConfig;
  readonly cache: TokenCache;
  readonly refresh: TokenVendingFunction;
  readonly issueKeys: TokenVendingFunction;
  readonly logRetention: logs.RetentionDays;
}

/**
 * The operators' function (docs/operations.md), run from the Lambda console's Test
 * tab or `tvm admin --function`: status, invalidate, refresh, issue-keys. It
 * lists and deletes token items, lists key-job summaries, and invokes the refresh and issue-keys
 * functions; it never reads the provider secret, unseals a token or writes a
 * key secret (those stay with the functions that need them).
 */
export class Admin extends Construct {
  readonly fn: TokenVendingFunction;

  constructor(scope: Construct, id: string, props: AdminProps) {
    super(scope, id);
    this.fn = new TokenVendingFunction(this, 'Admin', {
      stage: props.config.stage,
      destroyLogsWithStack: props.config.throwaway,
      name: 'admin',
      description: 'Operators: status, invalidate, refresh, issue-keys (console test events)',
      // 11 minutes: an issue-keys event waits for the job, which may run 10.
      timeout: Duration.minutes(11),
      memorySize: 256,
      logRetention: props.logRetention,
      environment: {
        // The `live` aliases: what a release has shifted traffic to.
        REFRESH_FUNCTION_NAME: props.refresh.liveName,
        ISSUE_KEYS_FUNCTION_NAME: props.issueKeys.liveName,
        IN_USE_WINDOW_SECONDS: String(IN_USE_WINDOW_SECONDS),
      },
    });
    // Status lists token items and key-job summaries through the two listing
    // indexes. The key-jobs index holds each job record's status attributes
    // only (never its Idempotency-Key or sealed answer), so the admin role
    // reaches no KEYS# item of the table. The alternative, key-job status
    // through an invoke of issue-keys, needs a way to list KEYS# items all
    // the same (issue-keys may not Scan either), adds a function call to
    // every status, and fails while a key run holds issue-keys' reserved
    // concurrency, just when an operator looks.
    props.cache.connectTable(this.fn, {
      items: ['dynamodb:DeleteItem'],
      prefix: 'TOKEN#',
      list: [TOKEN_INDEX, KEY_JOB_INDEX],
    });
    // The two functions' `live` aliases: not another version, nothing else.
    this.fn.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'InvokeRefreshAndIssueKeys',
        actions: ['lambda:InvokeFunction'],
        resources: [props.refresh.live.functionArn, props.issueKeys.live.functionArn],
      }),
    );
  }
}
