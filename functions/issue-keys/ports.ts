/**
 * The small interfaces the key-issuing job needs. Adapters in
 * `functions/adapters` implement them (DynamoDB, Secrets Manager, local files);
 * the token source is the client library's TokenVendingClient.
 */
import type { GetTokenOptions, Token } from '../../client/index.js';
import type { FailureCode } from './errors.js';

/**
 * - `pending`: an Idempotency-Key is held; the provider has not answered 2xx (or its answer was lost).
 * - `received`: the provider answered 2xx; the answer is sealed in the record, not yet in the vault.
 * - `stored`: the current keys are in the vault; no Idempotency-Key is held.
 * - `rejected`: the provider refused for good (403, 404, other 4xx) and nothing was ever
 *   stored; the next run starts with a new Idempotency-Key.
 */
export type KeyJobState = 'pending' | 'received' | 'stored' | 'rejected';

/** How the sealed copy's plaintext encodes the answer's bytes. */
export type SealedEncoding = 'utf8' | 'base64';

/** A job record (`KEYS#<id>`) as the job sees it. Times in epoch seconds unless named Ms. */
export interface KeyJobRecord {
  readonly businessApplicationId: string;
  readonly state: KeyJobState;
  /** The UUID sent as Idempotency-Key; kept until the keys are stored. */
  readonly idempotencyKey?: string;
  /** The forced request the Idempotency-Key was taken for; absent for an unforced issue. */
  readonly forceId?: string;
  /** Requests sent to the keys endpoint under the current Idempotency-Key. */
  readonly attempts: number;
  readonly leaseOwner?: string;
  /** Epoch milliseconds, as the token items' leases. */
  readonly leaseUntilMs?: number;
  readonly lastError?: FailureCode;
  readonly lastErrorAt?: number;
  readonly createdAt?: number;
  readonly updatedAt?: number;
  readonly lastAttemptAt?: number;
  /** When the provider's 2xx answer arrived. */
  readonly receivedAt?: number;
  /** The status of the provider's last 2xx answer (the document does not say 200 or 201). */
  readonly responseStatus?: number;
  /** The recovery copy: the whole answer, sealed with the record's pk as context. */
  readonly sealed?: { readonly blob: Uint8Array; readonly encoding: SealedEncoding };
  /** Where the keys were last stored (secret name or file path). */
  readonly secretName?: string;
  /** The vault version last stored (the Idempotency-Key it was issued with). */
  readonly secretVersion?: string;
  readonly storedAt?: number;
  /** How many key sets were stored for this id over time. */
  readonly issueCount: number;
  /**
   * The forced requests (their `forceId`s, oldest first, the latest
   * MAX_FORCED_REQUESTS) whose new key set was stored for this id: a retry of
   * one of them skips the id instead of issuing yet another set.
   */
  readonly forcedBy?: readonly string[];
}

/** How many forced requests a job record remembers (forcedBy). */
export const MAX_FORCED_REQUESTS = 20;

/** Job records in the token cache table. Any method may throw a KeyJobStoreError. */
export interface KeyJobStore {
  /** Strongly consistent read. */
  get(id: string): Promise<KeyJobRecord | undefined>;
  /**
   * Takes the run lease (absent or ran out before `nowMs`) with a conditional write,
   * creating the record when missing. Returns the record under the lease, or
   * undefined when another run holds it.
   */
  acquire(
    id: string,
    owner: string,
    nowMs: number,
    untilMs: number,
  ): Promise<KeyJobRecord | undefined>;
  /** The following writes require `owner` to hold the lease, else throw LeaseLostError. */
  /** Sets a fresh Idempotency-Key (for the forced request `forceId`, if given): state pending, attempts 0. */
  begin(
    id: string,
    owner: string,
    idempotencyKey: string,
    nowMs: number,
    untilMs: number,
    forceId?: string,
  ): Promise<void>;
  /** Counts a request about to be sent and extends the lease. */
  recordAttempt(id: string, owner: string, nowMs: number, untilMs: number): Promise<void>;
  /** Keeps the sealed answer (state received) and extends the lease. */
  saveReceived(
    id: string,
    owner: string,
    received: { blob: Uint8Array; encoding: SealedEncoding; status: number },
    nowMs: number,
    untilMs: number,
  ): Promise<void>;
  /**
   * State stored; drops the Idempotency-Key (and its forceId), the sealed copy, the last
   * error and the lease. `forcedBy`, when given, replaces the record's list of forced requests.
   */
  markStored(
    id: string,
    owner: string,
    stored: {
      secretName: string;
      secretVersion: string;
      status: number;
      forcedBy?: readonly string[];
    },
    nowMs: number,
  ): Promise<void>;
  /**
   * Records the failure and gives the lease up. With `next`, the state becomes it and the
   * Idempotency-Key (and its forceId) is dropped (a definitive refusal; never while a
   * sealed copy is held).
   */
  recordFailure(
    id: string,
    owner: string,
    code: FailureCode,
    nowMs: number,
    next?: 'stored' | 'rejected',
  ): Promise<void>;
  /** Gives the lease up if `owner` still holds it; never throws for a lost lease. */
  release(id: string, owner: string): Promise<void>;
  /**
   * An operator's clear-pending-key: drops `idempotencyKey` (and its forceId) and sets
   * the state to `next`, only while the record holds that key, no sealed answer, and
   * no lease that is live at `nowMs`. False (nothing written) otherwise.
   */
  clearPendingKey(
    id: string,
    idempotencyKey: string,
    nowMs: number,
    next: 'stored' | 'rejected',
  ): Promise<boolean>;
}

/**
 * A job record as operators see it (the admin `status`): its non-secret part
 * only, never the Idempotency-Key or the sealed answer.
 */
export interface KeyJobSummary {
  readonly businessApplicationId: string;
  readonly state: KeyJobState;
  readonly attempts: number;
  readonly issueCount: number;
  /** Epoch milliseconds: a run holds the job until then. */
  readonly leaseUntilMs?: number;
  readonly lastError?: FailureCode;
  readonly lastErrorAt?: number;
  readonly storedAt?: number;
  readonly secretName?: string;
  /** The provider's answer is kept sealed in the record, waiting to be stored. */
  readonly awaitingStore: boolean;
}

/** Lists job records for operators. May throw a KeyJobStoreError. */
export interface KeyJobSummaries {
  /** Every job record, eventually consistent: one written a moment ago may be missing. */
  list(): Promise<KeyJobSummary[]>;
}

/** Where issued keys are kept: Secrets Manager in AWS, files locally. */
export interface KeyVault {
  /**
   * Where `id`'s keys go (secret name or file path), checked before the provider is called.
   * @throws InvalidKeyIssuingRequestError when the id cannot be stored there.
   */
  locationOf(id: string): string;
  /**
   * Whether keys for `id` are in the vault (a secret with a current value, or a file,
   * at `locationOf(id)`), asked before anything is issued: its answer counts when the
   * job record knows of none, its KeyVaultUnavailableError always.
   * @throws KeyVaultUnavailableError when the vault cannot say, or could not take keys
   *   (a secret scheduled for deletion, something other than a file at the path).
   */
  has(id: string): Promise<boolean>;
  /**
   * Stores `body`, exactly as the provider sent it, as `id`'s current keys. Idempotent for
   * one `version` (the Idempotency-Key): a retried store makes no second version.
   * @throws KeyVaultError
   */
  put(
    id: string,
    body: Uint8Array,
    version: string,
  ): Promise<{ location: string; version: string }>;
}

/** The unscoped token, through the client library (TokenVendingClient fits). */
export interface UnscopedTokenSource {
  getToken(options?: GetTokenOptions): Promise<Token>;
  /** `null`: forget the cached unscoped token. */
  invalidate(scope?: string | null): void;
}

/** Counters the job reports (Powertools Metrics behind it in Lambda). */
export type KeyJobMetric =
  | 'KeyIssuingRuns'
  /**
   * A run that failed its invocation because one or more ids failed: the
   * key-issuing-failures alarm pages for those ids (`KeyIssuingFailures`), so
   * the issue-keys-errors alarm leaves such invocations out.
   */
  | 'KeyIssuingRunsFailed'
  | 'InvalidEvents'
  /**
   * A clear-pending-key the job refused (`no_pending_key`,
   * `answer_awaiting_store`, `job_in_progress`): an answer to the operator
   * who asked, not an outage, so the issue-keys-errors alarm leaves it out.
   */
  | 'RefusedRequests'
  | 'KeysIssued'
  | 'KeysRecovered'
  | 'KeysSkipped'
  /**
   * An id the run did not work on: no time left to start it
   * (`not_attempted`), or another run holds it (`job_in_progress`). Not
   * counted as a KeyIssuingFailure, which pages; the run fails and Lambda
   * retries it.
   */
  | 'KeysNotAttempted'
  | 'KeyIssuingFailures'
  | 'KeysEndpointRequests'
  | 'KeysEndpointErrors'
  | 'KeyStoreFailures';
