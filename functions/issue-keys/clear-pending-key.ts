/**
 * An operator's way out of a pending Idempotency-Key that can never succeed:
 * the provider answered neither retryably nor with a definite refusal (409, an
 * empty or oversized 2xx), so every run, forced ones too, reuses the key and
 * fails again. After checking with the provider that nothing was issued under
 * it, the operator clears it (`{"action":"clear-pending-key",...}` to the admin,
 * which forwards it here: only this function may write `KEYS#` items). The next
 * run starts with a new key.
 *
 * Never while the record holds a sealed answer waiting to be stored (that would
 * lose keys the provider issued), nor while a run holds the job.
 */
import type { Clock } from '../core/clock.js';
import type { CoreLogger } from '../core/token-service-types.js';
import { PendingKeyNotClearedError } from './errors.js';
import type { ClearPendingKeyRequest } from './event.js';
import type { KeyJobRecord, KeyJobStore } from './ports.js';

/** What clear-pending-key answers; never key material (an Idempotency-Key is an id). */
export interface ClearPendingKeyResult {
  readonly business_application_id: string;
  /** The Idempotency-Key dropped. */
  readonly cleared_idempotency_key: string;
  /** `stored`: the keys stored before stay current; `rejected`: none stored. */
  readonly state: 'stored' | 'rejected';
  readonly note: string;
}

export interface ClearPendingKeyDeps {
  readonly store: Pick<KeyJobStore, 'get' | 'clearPendingKey'>;
  readonly clock: Clock;
  readonly logger: CoreLogger;
}

/** Why `record` cannot be cleared at `nowMs`, or undefined when it can. */
function refusal(
  id: string,
  record: KeyJobRecord | undefined,
  nowMs: number,
): PendingKeyNotClearedError | undefined {
  if (record?.state === 'received' || record?.sealed !== undefined) {
    return new PendingKeyNotClearedError(
      'answer_awaiting_store',
      `the provider's answer for ${id} is kept sealed, waiting to be stored; clearing its Idempotency-Key would lose the keys the provider issued. Run issue-keys for it to store them (recovery_failed: see docs/operations.md).`,
    );
  }
  if (record?.idempotencyKey === undefined) {
    return new PendingKeyNotClearedError(
      'no_pending_key',
      `the key job of ${id} holds no pending Idempotency-Key (state ${record?.state ?? 'none: no job record'}); nothing to clear.`,
    );
  }
  if (record.leaseUntilMs !== undefined && record.leaseUntilMs >= nowMs) {
    return new PendingKeyNotClearedError(
      'job_in_progress',
      `a run holds the key job of ${id} until ${new Date(record.leaseUntilMs).toISOString()}; try again after it.`,
    );
  }
  return undefined;
}

/** Logs a refusal (with the operator's reason) and returns it to throw. */
function refused(
  deps: ClearPendingKeyDeps,
  request: ClearPendingKeyRequest,
  error: PendingKeyNotClearedError,
): PendingKeyNotClearedError {
  deps.logger.warn('pending Idempotency-Key not cleared', {
    businessApplicationId: request.businessApplicationId,
    code: error.code,
    reason: request.reason,
  });
  return error;
}

/**
 * Drops the pending Idempotency-Key of one key job, with one conditional write.
 * @throws PendingKeyNotClearedError (nothing changed), KeyJobStoreError
 */
export async function clearPendingKey(
  deps: ClearPendingKeyDeps,
  request: ClearPendingKeyRequest,
): Promise<ClearPendingKeyResult> {
  const { businessApplicationId: id, reason } = request;
  const nowMs = deps.clock.now();
  const record = await deps.store.get(id);
  const refusedNow = refusal(id, record, nowMs);
  if (refusedNow) throw refused(deps, request, refusedNow);
  const key = record?.idempotencyKey as string;
  const state = record?.storedAt === undefined ? 'rejected' : 'stored';
  if (!(await deps.store.clearPendingKey(id, key, nowMs, state))) {
    // The record changed since it was read: a run took it, stored, or began anew.
    throw refused(
      deps,
      request,
      refusal(id, await deps.store.get(id), nowMs) ??
        new PendingKeyNotClearedError(
          'job_in_progress',
          `the key job of ${id} changed while it was being cleared; check status and try again.`,
        ),
    );
  }
  deps.logger.warn('pending Idempotency-Key cleared by an operator', {
    businessApplicationId: id,
    idempotencyKey: key,
    attempts: record?.attempts,
    lastError: record?.lastError,
    state,
    reason,
  });
  return {
    business_application_id: id,
    cleared_idempotency_key: key,
    state,
    note:
      state === 'stored'
        ? 'The keys stored before stay current; a forced issue-keys run issues a new set with a new Idempotency-Key.'
        : 'No keys are stored for it; the next issue-keys run issues them with a new Idempotency-Key.',
  };
}
