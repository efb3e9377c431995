/**
 * The key-issuing job (docs/operations.md) over injected parts. The Lambda handler,
 * the admin function's `issue-keys` action and the local stack all build it
 * through `createKeyIssuingJob` and call `run` (result only) or `handle`
 * (event in; throws when any id failed).
 */
import { randomUUID } from 'node:crypto';
import { type Clock, systemClock } from '../core/clock.js';
import type { Sealer } from '../core/ports.js';
import type { CoreLogger } from '../core/token-service-types.js';
import { type ClearPendingKeyResult, clearPendingKey } from './clear-pending-key.js';
import {
  asInvocationError,
  ConfiguredIdsUnavailableError,
  KeyIssuingFailedError,
  type KeyIssuingResult,
  PendingKeyNotClearedError,
} from './errors.js';
import { parseClearPendingKeyEvent, parseKeyIssuingEvent } from './event.js';
import { type IdOutcome, issueForId } from './issue-for-id.js';
import type { KeysRequestConfig } from './keys-request.js';
import type { KeyJobMetric, KeyJobStore, KeyVault, UnscopedTokenSource } from './ports.js';

export interface KeyIssuingJobDeps {
  readonly store: KeyJobStore;
  readonly vault: KeyVault;
  /** Seals the recovery copy (KMS in AWS, AES-GCM locally); context = the record's pk. */
  readonly sealer: Sealer;
  /** The unscoped token through the client library (a TokenVendingClient). */
  readonly tokens: UnscopedTokenSource;
  readonly logger: CoreLogger;
  /** Default: real time. */
  readonly clock?: Clock;
  /** Default: the global fetch. */
  readonly fetch?: typeof fetch;
  /** Jitter source. Default Math.random. */
  readonly random?: () => number;
  readonly count?: (metric: KeyJobMetric) => void;
  /** Idempotency-Keys and run ids. Default crypto.randomUUID. */
  readonly uuid?: () => string;
}

export interface KeyIssuingJobConfig extends Omit<KeysRequestConfig, 'baseUrl' | 'body'> {
  /** The provider's base URL (`PROVIDER_BASE_URL`). */
  readonly providerBaseUrl: string;
  /**
   * The configured ids, used when an event names none: a list, or a function
   * read at each run (the access policy document's `keyIssuing` ids, which
   * change without a deploy).
   */
  readonly businessApplicationIds: readonly string[] | (() => Promise<readonly string[]>);
  /** JSON text sent as the request body (`KEY_ISSUE_REQUEST_BODY`); absent: no body. */
  readonly requestBody?: string;
  /** Run lease on a job record, ms. Default 60 000; renewed before each request. */
  readonly leaseMs?: number;
}

export interface KeyIssuingRunOptions {
  /** Default: the configured ids. */
  readonly businessApplicationIds?: readonly string[];
  /** Issue a new key set even where one is stored. Default false. */
  readonly force?: boolean;
  /**
   * With `force`: the forced request's identity (see FORCED REQUESTS below).
   * Default: this run's own id, so only this run counts as that request.
   */
  readonly forceId?: string;
  /** Epoch ms after which no further id is started (reported `not_attempted`). */
  readonly deadlineMs?: number;
}

export interface KeyIssuingJob {
  /**
   * Processes every id, then returns what happened to each; never throws for an id's failure.
   * @throws ConfiguredIdsUnavailableError when no ids were given and the configured ones
   *   could not be read (the access policy document could not be loaded)
   */
  run(options?: KeyIssuingRunOptions): Promise<KeyIssuingResult>;
  /**
   * Validates an event (`{}`, `{"businessApplicationIds":[...],"force":true}`), runs it,
   * and throws a KeyIssuingFailedError (carrying the result) when any id failed.
   * `requestId` (the Lambda request id) is a forced event's identity unless the
   * event names one (`forceId`).
   * @throws InvalidKeyIssuingRequestError, KeyIssuingFailedError, ConfiguredIdsUnavailableError
   */
  handle(
    event: unknown,
    options?: { deadlineMs?: number; requestId?: string },
  ): Promise<KeyIssuingResult>;
  /**
   * Validates a `{"action":"clear-pending-key","businessApplicationId","reason"}`
   * event and drops that key job's pending Idempotency-Key (clear-pending-key.ts).
   * @throws InvalidKeyIssuingRequestError, PendingKeyNotClearedError, KeyJobStoreError
   */
  clearPendingKey(event: unknown): Promise<ClearPendingKeyResult>;
}

/*
 * FORCED REQUESTS. A forced request issues a new key set for each of its ids at
 * most once, whatever retries the platform adds. The request has an identity,
 * its `forceId`; the job record keeps it with the Idempotency-Key taken for it
 * (`forceId`), and once that key set is stored, in the record's `forcedBy`
 * (the latest MAX_FORCED_REQUESTS). A forced run skips an id whose record
 * lists its forceId: another run of the same request did the work.
 *
 * Which identity a forced run carries:
 * - the event's `forceId`, when given: an operator who repeats an event with
 *   the same forceId (say a change ticket) never reissues an id twice;
 * - else the Lambda request id (`context.awsRequestId`). When Lambda retries an
 *   asynchronous invocation after a function error or timeout (twice, by
 *   default: https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html),
 *   the retry carries the same request id: duplicate invocations with the same
 *   request id that returned an error or timed out are Lambda's retries
 *   (https://repost.aws/knowledge-center/lambda-function-duplicate-invocations).
 *   The handler throws when any id failed, so the ids that succeeded would
 *   otherwise be reissued by each retry;
 * - the admin function invokes this one synchronously, a new request id each
 *   time, so it passes its own request id as the forceId (the same on
 *   Lambda's retries of an asynchronous admin invocation, and on the SDK's
 *   resends of its Invoke);
 * - `run` without a forceId (locally, `npm run admin`): the run's own id.
 */

export const DEFAULT_LEASE_MS = 60_000;

/**
 * The latest time an invocation with `remainingMs` left may start an id: the
 * longest one id can take (`longestIdMs`, at least a job lease) and a 15 s
 * margin are kept back, so the last id started ends before the function's
 * timeout, which would otherwise leave its lease to run out. A short
 * invocation still gets half its time.
 */
export function idStartDeadline(nowMs: number, remainingMs: number, longestIdMs: number): number {
  const reserveMs = Math.max(DEFAULT_LEASE_MS, longestIdMs) + 15_000;
  return nowMs + Math.max(remainingMs - reserveMs, remainingMs / 2);
}

/** Ids this run did not work on, which another run (its retry, or the holder) takes up. */
const LEFT_TO_ANOTHER_RUN: ReadonlySet<string> = new Set(['not_attempted', 'job_in_progress']);

const METRIC: Record<IdOutcome['kind'], KeyJobMetric> = {
  issued: 'KeysIssued',
  skipped: 'KeysSkipped',
  failed: 'KeyIssuingFailures',
};

export function createKeyIssuingJob(
  deps: KeyIssuingJobDeps,
  config: KeyIssuingJobConfig,
): KeyIssuingJob {
  const clock = deps.clock ?? systemClock;
  const uuid = deps.uuid ?? randomUUID;
  const count = deps.count ?? (() => undefined);
  const { logger } = deps;
  const { providerBaseUrl, businessApplicationIds, requestBody, leaseMs, ...tuning } = config;
  const requestConfig: KeysRequestConfig = {
    ...tuning,
    baseUrl: providerBaseUrl,
    ...(requestBody === undefined ? {} : { body: requestBody }),
  };

  async function run(options: KeyIssuingRunOptions = {}): Promise<KeyIssuingResult> {
    const configured =
      typeof businessApplicationIds === 'function'
        ? () => businessApplicationIds()
        : () => Promise.resolve(businessApplicationIds);
    const owner = uuid();
    let requested = options.businessApplicationIds;
    if (requested === undefined) {
      try {
        requested = await configured();
      } catch (error) {
        count('KeyIssuingRuns');
        logger.error('could not load the configured business application ids; nothing issued', {
          runId: owner,
          errorName: error instanceof Error ? error.name : typeof error,
        });
        throw new ConfiguredIdsUnavailableError(error);
      }
    }
    const ids = [...new Set(requested)];
    const force = options.force ?? false;
    const forceId = force ? (options.forceId ?? owner) : undefined;
    count('KeyIssuingRuns');
    const result: KeyIssuingResult = { issued: [], skipped: [], failed: [] };
    if (ids.length === 0) {
      logger.warn('no business application ids to issue keys for', { runId: owner });
    }
    const perId = {
      store: deps.store,
      vault: deps.vault,
      sealer: deps.sealer,
      tokens: deps.tokens,
      fetch: deps.fetch ?? ((input, init) => globalThis.fetch(input, init)),
      clock,
      random: deps.random ?? Math.random,
      logger,
      count,
      uuid,
      owner,
      leaseMs: leaseMs ?? DEFAULT_LEASE_MS,
    } satisfies Parameters<typeof issueForId>[0];

    for (const id of ids) {
      const started = clock.now();
      let outcome: IdOutcome;
      if (options.deadlineMs !== undefined && started >= options.deadlineMs) {
        outcome = { kind: 'failed', code: 'not_attempted' };
      } else {
        outcome = await issueForId(perId, requestConfig, id, forceId);
      }
      // Not the id's failure: the invocation ran out of time first, or another
      // run holds the id and works on it. The run still fails, so Lambda's
      // retry of it takes the id up (the failed-runs queue pages if the
      // retries run out too); it pages nobody itself.
      const notAttempted = outcome.kind === 'failed' && LEFT_TO_ANOTHER_RUN.has(outcome.code);
      count(notAttempted ? 'KeysNotAttempted' : METRIC[outcome.kind]);
      if (outcome.kind === 'issued') {
        result.issued.push(id);
        if (outcome.recovered) count('KeysRecovered');
      } else if (outcome.kind === 'skipped') {
        result.skipped.push(id);
      } else {
        result.failed.push({ id, code: outcome.code });
      }
      const line = {
        runId: owner,
        businessApplicationId: id,
        outcome: outcome.kind,
        ...(outcome.kind === 'failed' ? { code: outcome.code } : {}),
        ...(outcome.kind === 'issued' ? { recovered: outcome.recovered } : {}),
        force,
        latencyMs: clock.now() - started,
      };
      if (notAttempted) logger.warn('key job', line);
      else if (outcome.kind === 'failed') logger.error('key job', line);
      else logger.info('key job', line);
    }
    logger.info('key issuing run finished', {
      runId: owner,
      force,
      ...(forceId === undefined ? {} : { forceId }),
      issued: result.issued,
      skipped: result.skipped,
      failed: result.failed,
    });
    return result;
  }

  /** `parse(event)`, counting and logging an invalid event before it is thrown. */
  function validated<T>(parse: (event: unknown) => T, event: unknown): T {
    try {
      return parse(event);
    } catch (error) {
      count('InvalidEvents');
      logger.warn('invalid key-issuing event', {
        error: error instanceof Error ? error.message : String(error),
      });
      throw error;
    }
  }

  async function handle(
    event: unknown,
    options: { deadlineMs?: number; requestId?: string } = {},
  ): Promise<KeyIssuingResult> {
    const request = validated(parseKeyIssuingEvent, event);
    const { requestId, ...rest } = options;
    const forceId = request.forceId ?? requestId;
    const result = await run({
      ...request,
      ...rest,
      ...(forceId === undefined ? {} : { forceId }),
    });
    if (result.failed.length > 0) {
      // key-issuing-failures pages for these ids; the failed invocation is for
      // the schedule's retries and dead-letter queue, and pages nobody again.
      count('KeyIssuingRunsFailed');
      throw new KeyIssuingFailedError(result);
    }
    return result;
  }

  return {
    run,
    handle,
    clearPendingKey: async (event) => {
      const request = validated(parseClearPendingKeyEvent, event);
      try {
        return await clearPendingKey({ store: deps.store, clock, logger }, request);
      } catch (error) {
        // The operator's answer (nothing to clear, or not now), not an outage.
        if (error instanceof PendingKeyNotClearedError) count('RefusedRequests');
        // A table failure too answers with its code (job_store_unavailable), not a stack trace.
        throw asInvocationError(error);
      }
    },
  };
}
