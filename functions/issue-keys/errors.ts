/**
 * One base error for the key-issuing job. Each subclass sets a literal `name`
 * (minifiers rename classes) and a machine-readable `code`. Messages name ids,
 * codes and HTTP statuses only: never a token, key, secret or response body.
 */
import type { TokenVendingErrorCode } from '../../client/index.js';

/** Codes of the job's own failures (the client's token codes come on top, see FailureCode). */
export type KeyIssuingCode =
  /** A bad event or business application id; nothing was sent. */
  | 'invalid_request'
  /** 403 from the keys endpoint: the partner must ask the provider to enable key issuing. */
  | 'feature_not_enabled'
  /** 404 from the keys endpoint. */
  | 'business_application_not_found'
  /** 429, 5xx, timeouts and network errors after the retries of this run; left pending. */
  | 'upstream_unavailable'
  /** Any other unexpected answer (other 4xx, 2xx with an empty or oversized body). */
  | 'upstream_error'
  /** 401 again with a freshly fetched unscoped token. */
  | 'token_rejected'
  /** The keys were issued but not stored; the sealed copy (if it could be made) is kept. */
  | 'store_failed'
  /** The vault could not say whether keys are stored (for an id with no job record); nothing was issued. */
  | 'key_vault_unavailable'
  /** The sealed copy could not be unsealed; it is kept, the provider is not called. */
  | 'recovery_failed'
  /** KMS could not answer (throttled, failing) to unseal the sealed copy; kept, the next run tries again. */
  | 'sealer_unavailable'
  /** Another run holds this id's lease. */
  | 'job_in_progress'
  /** This run's lease ran out and another run took the id over. */
  | 'lease_lost'
  /** DynamoDB failed for the job record. */
  | 'job_store_unavailable'
  /** The invocation ran out of time before this id was started. */
  | 'not_attempted'
  | 'internal_error'
  /** clear-pending-key refused: the job record holds no pending Idempotency-Key. */
  | 'no_pending_key'
  /**
   * clear-pending-key refused: the provider's answer waits, sealed, to be stored;
   * dropping its Idempotency-Key would lose keys the provider issued.
   */
  | 'answer_awaiting_store'
  /** The invocation-level failure: at least one id failed. */
  | 'key_issuing_failed'
  /**
   * The invocation-level failure of a run over the configured ids: the access
   * policy document that lists them could not be loaded; nothing was issued.
   */
  | 'policy_unavailable';

/** The codes that fail a whole invocation, never one id. */
const RUN_CODES = ['key_issuing_failed', 'policy_unavailable'] as const;
type RunCode = (typeof RUN_CODES)[number];

/** Whether `code` fails a whole invocation (never one id's failure code). */
export const isRunCode = (code: string): code is RunCode =>
  (RUN_CODES as readonly string[]).includes(code);

/** What `failed[].code` holds: the job's codes, or the client library's when the token fetch failed. */
export type FailureCode = Exclude<KeyIssuingCode, RunCode> | TokenVendingErrorCode;

export class KeyIssuingError extends Error {
  override name = 'KeyIssuingError';
  readonly code: FailureCode | RunCode;

  constructor(code: FailureCode | RunCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/**
 * An error as an invocation fails with it: its message starts with its code
 * (`job_store_unavailable: ...`; the admin's invoker and operators read the
 * code there) and its stack is only its message, never a stack trace. Other
 * errors are returned unchanged.
 */
export function asInvocationError(error: unknown): unknown {
  if (error instanceof KeyIssuingError) {
    if (!error.message.startsWith(`${error.code}:`)) {
      error.message = `${error.code}: ${error.message}`;
    }
    error.stack = `${error.name}: ${error.message}`;
  }
  return error;
}

/**
 * A bad event, setting or id. Its stack is only its message: operators get a
 * clear answer, never a stack trace.
 */
export class InvalidKeyIssuingRequestError extends KeyIssuingError {
  override name = 'InvalidKeyIssuingRequestError' as const;
  constructor(message: string) {
    super('invalid_request', `invalid_request: ${message}`);
    this.stack = `${this.name}: ${this.message}`;
  }
}

/** 4xx answers after which the provider may still hold (or be working on) this key's request. */
const NOT_DEFINITIVE: ReadonlySet<number> = new Set([401, 408, 409, 425, 429]);

/**
 * A run over the configured ids could not learn them: the access policy
 * document (AppConfig) that lists them could not be loaded, as on a cold
 * start while AppConfig is out of reach. Nothing was issued. Its stack is
 * only its message: operators get the code, never a stack trace.
 */
export class ConfiguredIdsUnavailableError extends KeyIssuingError {
  override name = 'ConfiguredIdsUnavailableError' as const;
  constructor(cause: unknown) {
    const name = cause instanceof Error ? cause.name : typeof cause;
    super(
      'policy_unavailable',
      `policy_unavailable: the access policy, which lists the business applications a scheduled run covers, could not be loaded (${name}); nothing was issued. The next run tries again; an event naming businessApplicationIds does not need it.`,
      { cause },
    );
    this.stack = `${this.name}: ${this.message}`;
  }
}

/** An answer of the keys endpoint (or its absence) that did not issue keys. */
export class KeysEndpointError extends KeyIssuingError {
  override name = 'KeysEndpointError' as const;
  /** HTTP status; 0 when there was no complete answer. */
  readonly status: number;
  /** Worth another attempt with the same Idempotency-Key (429, 5xx, network, timeout). */
  readonly retryable: boolean;
  /** The provider's Retry-After in seconds, when it sent one. */
  readonly retryAfter?: number;

  constructor(
    code: FailureCode,
    message: string,
    details: { status: number; retryable: boolean; retryAfter?: number; cause?: unknown },
  ) {
    super(code, message, details.cause === undefined ? undefined : { cause: details.cause });
    this.status = details.status;
    this.retryable = details.retryable;
    if (details.retryAfter !== undefined) this.retryAfter = details.retryAfter;
  }

  /**
   * The provider definitely refused (403, 404, other 4xx but 401, 408, 409, 425, 429):
   * nothing was issued under this Idempotency-Key, so the next run may use a new one
   * (a provider that stores failed answers per key would otherwise replay the refusal).
   */
  get definitive(): boolean {
    return (
      !this.retryable && this.status >= 400 && this.status < 500 && !NOT_DEFINITIVE.has(this.status)
    );
  }
}

/** The vault (Secrets Manager, local files) failed; wrapped at the adapter. */
export class KeyVaultError extends KeyIssuingError {
  override name = 'KeyVaultError' as const;
  constructor(message: string, options?: { cause?: unknown }) {
    super('store_failed', message, options);
  }
}

/** The vault could not say whether an id's keys are stored; nothing was issued. */
export class KeyVaultUnavailableError extends KeyIssuingError {
  override name = 'KeyVaultUnavailableError' as const;
  constructor(message: string, options?: { cause?: unknown }) {
    super('key_vault_unavailable', message, options);
  }
}

/** DynamoDB failed for a job record; wrapped at the adapter. */
export class KeyJobStoreError extends KeyIssuingError {
  override name = 'KeyJobStoreError' as const;
  constructor(message: string, options?: { cause?: unknown }) {
    super('job_store_unavailable', message, options);
  }
}

/** A conditional write found another run's lease on the record. */
export class LeaseLostError extends KeyIssuingError {
  override name = 'LeaseLostError' as const;
  constructor(id: string) {
    super('lease_lost', `The lease on ${id} was taken over by another run.`);
  }
}

/** Why an operator's clear-pending-key was refused (`job_in_progress`: a run holds the job). */
export type PendingKeyRefusal = 'no_pending_key' | 'answer_awaiting_store' | 'job_in_progress';

/** An operator's clear-pending-key that was refused; nothing was changed. No stack trace. */
export class PendingKeyNotClearedError extends KeyIssuingError {
  override name = 'PendingKeyNotClearedError' as const;
  constructor(code: PendingKeyRefusal, message: string) {
    super(code, `${code}: ${message}`);
    this.stack = `${this.name}: ${this.message}`;
  }
}

/** One failed id of a run. */
export interface KeyIssuingFailure {
  readonly id: string;
  readonly code: FailureCode;
}

/** What a run did, by business application id, in the order processed. */
export interface KeyIssuingResult {
  /** Keys issued (or recovered from the sealed copy) and stored in this run. */
  readonly issued: string[];
  /** Keys stored already (and no `force`). */
  readonly skipped: string[];
  readonly failed: KeyIssuingFailure[];
}

/**
 * Thrown after every id was processed when any failed, so Lambda's Errors
 * metric, the schedule's retries and its dead-letter queue see the failure.
 * Carries the whole result; the message names each failed id and its code.
 */
export class KeyIssuingFailedError extends KeyIssuingError {
  override name = 'KeyIssuingFailedError' as const;
  readonly result: KeyIssuingResult;

  constructor(result: KeyIssuingResult) {
    const list = result.failed.map((f) => `${f.id} (${f.code})`).join(', ');
    const total = result.issued.length + result.skipped.length + result.failed.length;
    super(
      'key_issuing_failed',
      `key_issuing_failed: ${result.failed.length} of ${total} business applications failed: ${list}`,
    );
    this.result = result;
    this.stack = `${this.name}: ${this.message}`;
  }
}
