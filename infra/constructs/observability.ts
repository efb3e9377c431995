import { Aws, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { TokenVendingFunction } from './token-vending-function.js';

/** Powertools Metrics namespace of every function (functions/*: `new Metrics({ namespace })`). */
export const NAMESPACE = 'TokenVending';
const PERIOD = Duration.minutes(5);
/**
 * The period of the alarms AppConfig watches an access policy deployment
 * with: one minute, so each can fire within the deployment's watched window
 * (access-policy-config.ts); the five-minute alarms need up to 15 minutes.
 */
export const POLICY_WATCH_PERIOD = Duration.minutes(1);

/** How an alarm fires: in `datapoints` of its last `periods` periods. */
interface Evaluation {
  readonly periods: number;
  readonly datapoints: number;
}
/** Failed token requests a period that upstream-errors pages for (in 2 of 3 periods). */
const UPSTREAM_ERRORS_THRESHOLD = 5;
const ONE_PERIOD: Evaluation = { periods: 1, datapoints: 1 };
const TWO_OF_THREE: Evaluation = { periods: 3, datapoints: 2 };

/** The repository file holding one runbook entry per alarm, headed by the alarm's short name. */
export const RUNBOOK_FILE = 'docs/operations.md';

/** The end of an alarm's description: where the person it pages finds what to do. */
const runbookPointer = (alarm: string): string => `Runbook: ${RUNBOOK_FILE}, alarm ${alarm}.`;

/** The Powertools service name of each function (`new Metrics({ serviceName })`). */
export type MetricService = 'vend-token' | 'refresh' | 'issue-keys' | 'admin';

/**
 * A Powertools metric, as every alarm and graph of the stack names one.
 * Powertools adds the `service` dimension to every metric (the function's
 * service name); `Vends` also carries `outcome`. Five-minute periods unless
 * `period` says otherwise (the release and policy watches judge minutes).
 */
export function powertoolsMetric(
  name: string,
  service: MetricService,
  options: { outcome?: string; statistic?: string; label?: string; period?: Duration } = {},
): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: NAMESPACE,
    metricName: name,
    dimensionsMap: {
      service,
      ...(options.outcome === undefined ? {} : { outcome: options.outcome }),
    },
    statistic: options.statistic ?? 'Sum',
    period: options.period ?? PERIOD,
    ...(options.label === undefined ? {} : { label: options.label }),
  });
}

/** Vend's 500 `internal_error` answers: a bug, never the provider or a caller. */
export const vendInternalErrorsMetric = (period?: Duration): cloudwatch.Metric =>
  powertoolsMetric('Vends', 'vend-token', {
    outcome: 'error:internal_error',
    ...(period === undefined ? {} : { period }),
  });

/** The functions that count failed invocations another signal owns. */
export type ExcusingService = 'admin' | 'issue-keys' | 'refresh';

/**
 * Failed invocations a function counts because they are no fault of its own
 * to page for: each metric, its id in an alarm's expression, and what it is.
 */
export const EXCUSED = {
  InvalidEvents: { id: 'invalid', says: 'events refused as invalid_request' },
  RefusedRequests: {
    id: 'refused',
    says: 'clear-pending-key requests it refused (no_pending_key, answer_awaiting_store, job_in_progress)',
  },
  KeyIssuingRunsFailed: {
    id: 'failedids',
    says: 'runs failed for ids that key-issuing-failures pages for',
  },
  InvokedFunctionFailures: {
    id: 'invoked',
    says: 'actions the invoked refresh or issue-keys function failed (its own alarms page)',
  },
  RefreshRunsFailedUpstream: {
    id: 'provider',
    says: 'refreshes that failed on the provider alone (upstream-errors and credentials-rejected page for those)',
  },
} as const;
export type ExcusedMetric = keyof typeof EXCUSED;

/**
 * What each paging errors alarm leaves out, so one fault pages once and an
 * operator's refused request pages nobody: a mistyped event; a
 * clear-pending-key the job refused; a key-issuing run that failed for ids
 * (key-issuing-failures pages); an action the admin forwarded that the
 * invoked function failed (that function's alarms page).
 */
export const EXCUSED_FAILURES: Record<ExcusingService, readonly ExcusedMetric[]> = {
  admin: ['InvalidEvents', 'InvokedFunctionFailures'],
  'issue-keys': ['InvalidEvents', 'RefusedRequests', 'KeyIssuingRunsFailed'],
  refresh: ['RefreshRunsFailedUpstream'],
};

/** A function's Errors less the `excused` failed invocations it counted. */
export function errorsLess(
  errors: cloudwatch.IMetric,
  service: ExcusingService,
  excused: readonly ExcusedMetric[],
  period: Duration,
  label: string,
): cloudwatch.MathExpression {
  return new cloudwatch.MathExpression({
    expression: ['FILL(errors, 0)', ...excused.map((m) => `FILL(${EXCUSED[m].id}, 0)`)].join(' - '),
    usingMetrics: {
      errors,
      ...Object.fromEntries(
        excused.map((m) => [EXCUSED[m].id, powertoolsMetric(m, service, { period })]),
      ),
    },
    period,
    label: `${label}, less ${excused.map((m) => EXCUSED[m].id).join(', ')}`,
  });
}

/**
 * A Lambda metric of a function (AWS/Lambda, dimension FunctionName: every
 * version and alias, the Function URL's included) by the function's literal
 * name, not a reference to it: the AppConfig environment watches vend's
 * errors, and the functions read that environment, so a reference would
 * close a dependency cycle.
 */
function lambdaMetric(fn: TokenVendingFunction, name: string, label?: string): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: 'AWS/Lambda',
    metricName: name,
    dimensionsMap: { FunctionName: fn.functionName },
    statistic: 'Sum',
    period: PERIOD,
    ...(label === undefined ? {} : { label }),
  });
}

export interface ObservabilityProps {
  readonly stage: string;
  readonly vend: TokenVendingFunction;
  readonly refresh: TokenVendingFunction;
  readonly issueKeys: TokenVendingFunction;
  readonly admin: TokenVendingFunction;
  readonly failedRuns: sqs.IQueue;
  readonly alarmEmail?: string;
}

/**
 * The dashboard and the alarms, each alarm to one SNS topic (encrypted with
 * its own key, TLS only, optionally an e-mail subscription). Each alarm's
 * meaning and first response are in docs/operations.md, under its name.
 */
export class Observability extends Construct {
  readonly topic: sns.Topic;
  readonly dashboard: cloudwatch.Dashboard;
  readonly alarms: cloudwatch.Alarm[] = [];
  /**
   * Alarms that roll an access policy deployment back when they fire during
   * it (AppConfig monitors): the signals of `policy-rejected`,
   * `vend-token-errors` and `vend-internal-errors` on one-minute periods,
   * none of which a provider outage moves. They notify no one: the rollback
   * is their action, and those three alarms page.
   */
  readonly policyRollbackAlarms: cloudwatch.Alarm[];
  /** The longest a policy rollback alarm needs to fire: its evaluation periods. */
  readonly policyRollbackWatch: Duration;
  readonly dashboardUrl: string;

  constructor(scope: Construct, id: string, props: ObservabilityProps) {
    super(scope, id);
    const prefix = `token-vending-${props.stage}`;
    this.topic = this.#topic(prefix, props.alarmEmail);

    const refreshCredentialsRejected = new logs.MetricFilter(this, 'RefreshCredentialsRejected', {
      logGroup: props.refresh.logGroup,
      // functions/refresh/scheduled-refresh.ts logs each failed scope with describe(error).
      filterPattern: logs.FilterPattern.all(
        logs.FilterPattern.stringValue('$.message', '=', 'scheduled refresh failed'),
        logs.FilterPattern.stringValue('$.error.code', '=', 'upstream_credentials_rejected'),
      ),
      metricNamespace: NAMESPACE,
      metricName: 'RefreshCredentialsRejected',
      metricValue: '1',
    }).metric({ statistic: 'Sum', period: PERIOD });

    const functions = [props.vend, props.refresh, props.issueKeys, props.admin];
    /** An alarm at `threshold` or more in `datapoints` of the last `periods` periods. */
    const alarmOn = (
      id: string,
      name: string,
      description: string,
      source: cloudwatch.IMetric,
      threshold: number,
      evaluation: Evaluation,
    ): cloudwatch.Alarm =>
      new cloudwatch.Alarm(this, id, {
        alarmName: `${prefix}-${name}`,
        alarmDescription: description,
        metric: source,
        threshold,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: evaluation.periods,
        datapointsToAlarm: evaluation.datapoints,
        // No data means no traffic or no run: not a failure.
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    /** A paging alarm: its runbook entry, and the topic told when it fires and clears. */
    const add = (
      name: string,
      description: string,
      source: cloudwatch.IMetric,
      threshold: number,
      evaluation: Evaluation = ONE_PERIOD,
    ): cloudwatch.Alarm => {
      const alarm = alarmOn(
        name,
        name,
        `${description} ${runbookPointer(name)}`,
        source,
        threshold,
        evaluation,
      );
      alarm.addAlarmAction(new SnsAction(this.topic));
      alarm.addOkAction(new SnsAction(this.topic));
      this.alarms.push(alarm);
      return alarm;
    };

    // Each side reports only when something happened: FILL makes a period with
    // data on one side only still add up (a missing term would drop the sum).
    // A refresh that failed on the provider alone fails no invocation (so
    // no retry, nothing in failed-runs): a period holding one counts as
    // breaching here, or a scope the provider keeps refusing, one error a
    // run, would page nobody until its callers' tokens ran out. One such
    // run (a blip) is one period: nobody is paged.
    add(
      'upstream-errors',
      'Token requests to the provider failed (after retries) in 2 of the last 3 five-minute periods, 5 or more each, or a refresh failed on the provider alone in each of them.',
      new cloudwatch.MathExpression({
        expression: `FILL(vend, 0) + FILL(refresh, 0) + ${UPSTREAM_ERRORS_THRESHOLD} * FILL(provider, 0)`,
        usingMetrics: {
          vend: powertoolsMetric('UpstreamErrors', 'vend-token'),
          refresh: powertoolsMetric('UpstreamErrors', 'refresh'),
          provider: powertoolsMetric('RefreshRunsFailedUpstream', 'refresh'),
        },
        period: PERIOD,
        label: 'Upstream errors',
      }),
      UPSTREAM_ERRORS_THRESHOLD,
      TWO_OF_THREE,
    );
    add(
      'credentials-rejected',
      'The provider rejected our key and secret (401/403), even after one re-read of the secret.',
      new cloudwatch.MathExpression({
        expression: 'FILL(vend, 0) + FILL(refresh, 0)',
        usingMetrics: {
          vend: powertoolsMetric('Vends', 'vend-token', {
            outcome: 'error:upstream_credentials_rejected',
          }),
          refresh: refreshCredentialsRejected,
        },
        period: PERIOD,
        label: 'Credentials rejected',
      }),
      1,
    );
    const vendInternalErrors = vendInternalErrorsMetric();
    add(
      'vend-internal-errors',
      'The vend function answered 500 internal_error (details in its log).',
      vendInternalErrors,
      1,
    );
    // Lambda's Function URL metric (AWS/Lambda, FunctionName): the function
    // answers 5xx as a successful invocation, so its Errors metric misses them.
    const vendUrl5xx = lambdaMetric(props.vend, 'Url5xxCount');
    add(
      'vend-url-5xx',
      'Callers got 5xx answers from the vend URL (such as 503 upstream_unavailable in a provider outage) in 2 of the last 3 five-minute periods, 5 or more each.',
      vendUrl5xx,
      5,
      TWO_OF_THREE,
    );
    add(
      'degraded',
      'Vends or refreshes ran without DynamoDB (every instance minting for itself) in 2 of the last 3 five-minute periods, 5 or more each.',
      new cloudwatch.MathExpression({
        expression: 'FILL(vend, 0) + FILL(refresh, 0)',
        usingMetrics: {
          vend: powertoolsMetric('Degraded', 'vend-token'),
          refresh: powertoolsMetric('Degraded', 'refresh'),
        },
        period: PERIOD,
        label: 'Degraded',
      }),
      5,
      TWO_OF_THREE,
    );
    add(
      'unseal-failures',
      'KMS refused to unseal a cached item with the cache key (a key policy that denies Decrypt, a disabled or deleted key, or a corrupt or tampered item); items sealed under a previous key are re-minted and not counted.',
      new cloudwatch.MathExpression({
        expression: 'FILL(vend, 0) + FILL(refresh, 0)',
        usingMetrics: {
          vend: powertoolsMetric('UnsealFailures', 'vend-token'),
          refresh: powertoolsMetric('UnsealFailures', 'refresh'),
        },
        period: PERIOD,
        label: 'Unseal failures',
      }),
      1,
    );
    for (const fn of functions) {
      const short = fn.functionName.slice(prefix.length + 1);
      const errors = fn.function.metricErrors({ period: PERIOD, statistic: 'Sum' });
      // Admin and issue-keys count the failed invocations another alarm pages
      // for, or that answer an operator's own mistake (EXCUSED_FAILURES).
      const excused = short in EXCUSED_FAILURES ? EXCUSED_FAILURES[short as ExcusingService] : [];
      add(
        `${short}-errors`,
        excused.length === 0
          ? `${fn.functionName} failed an invocation (threw, timed out or could not start).`
          : `${fn.functionName} failed an invocation (threw, timed out or could not start), not counting ${excused.map((m) => EXCUSED[m].says).join(', ')}.`,
        excused.length === 0
          ? errors
          : errorsLess(errors, short as ExcusingService, excused, PERIOD, `${short} errors`),
        1,
      );
      add(
        `${short}-throttles`,
        `${fn.functionName} was throttled (concurrency exhausted).`,
        fn.function.metricThrottles({ period: PERIOD, statistic: 'Sum' }),
        1,
      );
    }
    // Every function reads the access policy; each counts what it refused or could not fetch.
    const policyServices = ['vend-token', 'refresh', 'issue-keys', 'admin'] as const;
    // Ids per metric (`rejected0`, `fetch0`...): one graph shows both sums,
    // and CloudWatch wants one id per metric in a graph.
    const policySum = (name: string, id: string, label: string) =>
      new cloudwatch.MathExpression({
        expression: policyServices.map((_, i) => `FILL(${id}${i}, 0)`).join(' + '),
        usingMetrics: Object.fromEntries(
          policyServices.map((service, i) => [`${id}${i}`, powertoolsMetric(name, service)]),
        ),
        period: PERIOD,
        label,
      });
    const policiesRejected = policySum('PolicyRejected', 'rejected', 'Policy versions rejected');
    add(
      'policy-rejected',
      'A function refused an access policy version as invalid and kept the last good one (a version the validator let through, or a document edited in place).',
      policiesRejected,
      1,
    );
    add(
      'policy-fetch-failures',
      'Functions could not fetch the access policy from AppConfig 5 or more times in 2 of the last 3 five-minute periods: they keep the last good policy, so revocations wait.',
      policySum('PolicyFetchFailures', 'fetch', 'Policy fetch failures'),
      5,
      TWO_OF_THREE,
    );
    add(
      'key-issuing-failures',
      'The key-issuing job could not issue or store keys for one or more business applications.',
      powertoolsMetric('KeyIssuingFailures', 'issue-keys'),
      1,
    );
    add(
      'failed-runs',
      'A scheduled refresh or key-issuing run failed for good and is in the failed-runs queue.',
      props.failedRuns.metric('ApproximateNumberOfMessagesVisible', {
        statistic: 'Maximum',
        period: PERIOD,
      }),
      1,
    );

    // The same signals on one-minute periods, paging no one: AppConfig's rollback is their action.
    const watches: Array<{
      readonly name: string;
      readonly description: string;
      readonly source: cloudwatch.Metric | cloudwatch.MathExpression;
      readonly threshold: number;
      readonly evaluation: Evaluation;
    }> = [
      {
        name: 'rejected',
        description: 'A function refused the access policy version being deployed.',
        source: policiesRejected,
        threshold: 1,
        evaluation: ONE_PERIOD,
      },
      // Not the URL's 5xx: most are the provider's (503 upstream_unavailable in
      // an outage, 502 upstream_error), which no policy version causes, and
      // would roll back every version deployed meanwhile, an urgent
      // revocation included. What a version could do to vend besides a
      // refusal (`rejected`) or a bug (`internal_error`) is fail the
      // invocation: a document too large to parse in time or in memory.
      {
        name: 'vend-errors',
        description:
          'The vend function failed 5 or more invocations (crashed, timed out) in 2 of the last 3 minutes.',
        source: lambdaMetric(props.vend, 'Errors'),
        threshold: 5,
        evaluation: TWO_OF_THREE,
      },
      {
        name: 'vend-internal-errors',
        description: 'The vend function answered 500 internal_error.',
        source: vendInternalErrors,
        threshold: 1,
        evaluation: ONE_PERIOD,
      },
    ];
    this.policyRollbackAlarms = watches.map((watch) =>
      alarmOn(
        `PolicyWatch-${watch.name}`,
        `policy-watch-${watch.name}`,
        `${watch.description} AppConfig rolls an access policy deployment back when this fires during it.`,
        watch.source.with({ period: POLICY_WATCH_PERIOD }),
        watch.threshold,
        watch.evaluation,
      ),
    );
    this.policyRollbackWatch = Duration.minutes(
      POLICY_WATCH_PERIOD.toMinutes() * Math.max(...watches.map((w) => w.evaluation.periods)),
    );

    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      dashboardName: prefix,
      defaultInterval: Duration.hours(12),
    });
    const cacheServices = [
      ['vend-token', 'vend'],
      ['refresh', 'refresh'],
    ] as const;
    const graph = (
      title: string,
      left: cloudwatch.IMetric[],
      options: Partial<cloudwatch.GraphWidgetProps> = {},
    ) => new cloudwatch.GraphWidget({ title, left, width: 8, height: 6, ...options });
    this.dashboard.addWidgets(
      graph(
        'Vends by outcome',
        [
          new cloudwatch.MathExpression({
            // Every outcome there is: l1, l2, provider, refreshed, waited, degraded, error:<code>.
            expression: `SEARCH('{${NAMESPACE},outcome,service} MetricName="Vends" service="vend-token"', 'Sum', 300)`,
            label: '',
            period: PERIOD,
          }),
        ],
        { stacked: true },
      ),
      graph(
        'Vend latency (ms)',
        ['p50', 'p90', 'p99', 'Maximum'].map((statistic) =>
          powertoolsMetric('VendLatency', 'vend-token', { statistic, label: statistic }),
        ),
      ),
      graph('Upstream token requests and errors', [
        powertoolsMetric('UpstreamRequests', 'vend-token', { label: 'requests (vend)' }),
        powertoolsMetric('UpstreamRequests', 'refresh', { label: 'requests (refresh)' }),
        powertoolsMetric('UpstreamErrors', 'vend-token', { label: 'errors (vend)' }),
        powertoolsMetric('UpstreamErrors', 'refresh', { label: 'errors (refresh)' }),
      ]),
    );
    this.dashboard.addWidgets(
      // Vend and refresh share the cache core: each counts these under its own service.
      graph(
        'Leases: waits, polls, takeovers',
        cacheServices.flatMap(([service, who]) => [
          powertoolsMetric('LeaseWaits', service, { label: `lease waits (${who})` }),
          powertoolsMetric('LeaseWaitPolls', service, {
            label: `lease wait polls, reads (${who})`,
          }),
          powertoolsMetric('LeaseTakeovers', service, { label: `lease takeovers (${who})` }),
        ]),
      ),
      graph(
        'Cache: degraded, unusable items',
        cacheServices.flatMap(([service, who]) => [
          powertoolsMetric('Degraded', service, { label: `degraded (${who})` }),
          powertoolsMetric('UnsealFailures', service, { label: `unseal failures (${who})` }),
          powertoolsMetric('OtherKeyItems', service, {
            label: `items sealed under another key (${who})`,
          }),
          powertoolsMetric('StaleCredentialTokens', service, {
            label: `stale-credential tokens (${who})`,
          }),
        ]),
      ),
      graph('Scheduled refresh', [
        powertoolsMetric('ScheduledRefreshes', 'refresh', { label: 'scopes refreshed' }),
        powertoolsMetric('ScheduledRefreshFailures', 'refresh', { label: 'scopes failed' }),
        powertoolsMetric('ScheduledRefreshDeferred', 'refresh', {
          label: 'scopes left to vend (run out of time)',
        }),
        refreshCredentialsRejected.with({ label: 'credentials rejected' }),
      ]),
      graph('Key issuing', [
        powertoolsMetric('KeyIssuingRuns', 'issue-keys', { label: 'runs' }),
        powertoolsMetric('KeysIssued', 'issue-keys', { label: 'issued' }),
        powertoolsMetric('KeysSkipped', 'issue-keys', { label: 'skipped' }),
        powertoolsMetric('KeysRecovered', 'issue-keys', { label: 'stored from a sealed copy' }),
        powertoolsMetric('KeyIssuingFailures', 'issue-keys', { label: 'failed' }),
        powertoolsMetric('KeysNotAttempted', 'issue-keys', {
          label: 'left to another run (out of time, or held)',
        }),
        powertoolsMetric('KeyIssuingRunsFailed', 'issue-keys', { label: 'runs failed for ids' }),
        powertoolsMetric('KeysEndpointRequests', 'issue-keys', { label: 'keys endpoint requests' }),
        powertoolsMetric('KeysEndpointErrors', 'issue-keys', { label: 'keys endpoint errors' }),
        powertoolsMetric('KeyStoreFailures', 'issue-keys', { label: 'secret store failures' }),
      ]),
    );
    this.dashboard.addWidgets(
      graph('Vend URL answers', [
        lambdaMetric(props.vend, 'UrlRequestCount', 'requests'),
        lambdaMetric(props.vend, 'Url4xxCount', '4xx'),
        lambdaMetric(props.vend, 'Url5xxCount', '5xx'),
      ]),
      // The failed invocations the errors alarms leave out (EXCUSED_FAILURES).
      graph('Refused events, forwarded failures', [
        powertoolsMetric('InvalidEvents', 'admin', { label: 'invalid (admin)' }),
        powertoolsMetric('InvalidEvents', 'issue-keys', { label: 'invalid (issue-keys)' }),
        powertoolsMetric('RefusedRequests', 'issue-keys', { label: 'clear-pending-key refused' }),
        powertoolsMetric('InvokedFunctionFailures', 'admin', {
          label: 'admin actions the invoked function failed',
        }),
        powertoolsMetric('RefreshRunsFailedUpstream', 'refresh', {
          label: 'refreshes failed on the provider alone',
        }),
      ]),
      graph('Access policy', [
        policySum('PolicyRejected', 'rejected', 'versions rejected'),
        policySum('PolicyFetchFailures', 'fetch', 'fetch failures'),
      ]),
    );
    this.dashboard.addWidgets(
      graph(
        'Function errors',
        functions.map((fn) =>
          fn.function.metricErrors({ period: PERIOD, statistic: 'Sum', label: fn.functionName }),
        ),
      ),
      graph(
        'Function throttles',
        functions.map((fn) =>
          fn.function.metricThrottles({ period: PERIOD, statistic: 'Sum', label: fn.functionName }),
        ),
      ),
      graph('Failed runs queue', [
        props.failedRuns.metric('ApproximateNumberOfMessagesVisible', {
          statistic: 'Maximum',
          period: PERIOD,
          label: 'messages',
        }),
      ]),
    );
    this.dashboard.addWidgets(
      new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: this.alarms, width: 24 }),
    );
    this.dashboardUrl = `https://${Aws.REGION}.console.aws.amazon.com/cloudwatch/home?region=${Aws.REGION}#dashboards/dashboard/${prefix}`;
  }

  /** The alarm of that name (`vend-url-5xx`, `admin-errors`...). */
  alarm(name: string): cloudwatch.Alarm {
    const found = this.alarms.find((a) => a.node.id === name);
    if (!found) throw new Error(`no alarm ${name}`);
    return found;
  }

  #topic(prefix: string, email: string | undefined): sns.Topic {
    // CloudWatch cannot publish to a topic under the AWS managed SNS key: its own key.
    const key = new kms.Key(this, 'TopicKey', {
      description: `${prefix}: encrypts the alarm topic`,
      enableKeyRotation: true,
      pendingWindow: Duration.days(7),
      // Holds no data at rest (SNS does not store delivered messages).
      removalPolicy: RemovalPolicy.DESTROY,
    });
    key.grant(
      new iam.ServicePrincipal('cloudwatch.amazonaws.com'),
      'kms:Decrypt',
      'kms:GenerateDataKey',
    );
    const topic = new sns.Topic(this, 'AlarmTopic', {
      displayName: `${prefix} alarms`,
      masterKey: key,
      enforceSSL: true,
    });
    const { account, partition, region } = Stack.of(this);
    topic.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'CloudWatchAlarmsOfThisAccount',
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [topic.topicArn],
        conditions: {
          ArnLike: { 'aws:SourceArn': `arn:${partition}:cloudwatch:${region}:${account}:alarm:*` },
          StringEquals: { 'aws:SourceAccount': account },
        },
      }),
    );
    if (email !== undefined) topic.addSubscription(new subscriptions.EmailSubscription(email));
    return topic;
  }
}
