/**
 * The key-issuing job (docs/merchant-keys.md) for one business application id: skip when stored (as the
 * record says, or the vault when the record knows of no stored keys), take the
 * run lease on its job record, and do the work under it (leased-work.ts).
 */
import { assertBusinessApplicationId } from './business-application-id.js';
import { KeyVaultUnavailableError } from './errors.js';
import {
  causeName,
  errorName,
  failed,
  failureCodeOf,
  type IdOutcome,
  skippedAsDone,
} from './id-outcome.js';
import type { KeysRequestConfig } from './keys-request.js';
import { type IssueForIdDeps, LeasedWork } from './leased-work.js';
import type { KeyJobRecord } from './ports.js';
import { awaitsStore, isDone, knowsNothingStored } from './record-rules.js';

export type { IdOutcome } from './id-outcome.js';
export type { IssueForIdDeps } from './leased-work.js';

/**
 * Processes one id. Per-id failures are returned, never thrown. With `forceId`
 * (a forced request's identity, see job.ts) a new key set is issued even when
 * one is stored (an unfinished issue is finished first, see docs/merchant-keys.md), once per
 * forced request: a retry of a request whose new set was stored skips the id.
 */
export async function issueForId(
  deps: IssueForIdDeps,
  config: KeysRequestConfig,
  id: string,
  forceId: string | undefined,
): Promise<IdOutcome> {
  const log = { businessApplicationId: id };
  const force = forceId !== undefined;
  try {
    assertBusinessApplicationId(id);
    deps.vault.locationOf(id); // refuses ids the vault cannot name, before anything is issued
  } catch (error) {
    return failed(failureCodeOf(error));
  }

  let before: KeyJobRecord | undefined;
  try {
    before = await deps.store.get(id);
  } catch (error) {
    return failed(failureCodeOf(error));
  }
  if (isDone(before, forceId)) return skippedAsDone(deps.logger, id, forceId);
  // Ask the vault before anything can be issued (a sealed answer waiting to be
  // stored needs no provider call): whether keys are stored, when the record
  // knows of none, and in every case whether it could take keys now. A secret
  // scheduled for deletion takes no new version: keys issued for it (a forced
  // reissue, or a pending issue finished) could only fail to store.
  if (!awaitsStore(before)) {
    try {
      const stored = await deps.vault.has(id);
      if (stored && !force && knowsNothingStored(before)) {
        // Keys may be stored all the same: a recreated table, or locally a restart
        // (the records were in memory, the key files are not), then maybe a refused
        // forced reissue. Never issue over them.
        deps.logger.info('keys already stored, though the job has no record of them; skipped', log);
        return { kind: 'skipped' };
      }
    } catch (error) {
      const code = failureCodeOf(error);
      deps.logger.warn(
        'could not tell whether keys are stored, or the vault cannot take keys now; nothing issued',
        {
          ...log,
          code,
          errorName: errorName(error),
          causeName: causeName(error),
          // Our own adapter's words (the secret or file and why), never a value.
          ...(error instanceof KeyVaultUnavailableError ? { detail: error.message } : {}),
        },
      );
      return failed(code);
    }
  }

  const nowMs = deps.clock.now();
  let record: KeyJobRecord | undefined;
  try {
    record = await deps.store.acquire(id, deps.owner, nowMs, nowMs + deps.leaseMs);
  } catch (error) {
    return failed(failureCodeOf(error));
  }
  if (!record) {
    deps.logger.warn('another run holds this key job; not touched', {
      ...log,
      leaseUntilMs: before?.leaseUntilMs,
    });
    return failed('job_in_progress');
  }
  if (before?.leaseOwner !== undefined && before.leaseOwner !== deps.owner) {
    deps.logger.warn('took over a key job whose run lease ran out', log);
  }

  const work = new LeasedWork(deps, config, id, record);
  try {
    return await work.run(forceId);
  } catch (error) {
    // Anything not handled inside: the record keeps its Idempotency-Key and sealed copy.
    const code = failureCodeOf(error);
    if (code === 'internal_error') {
      deps.logger.error('key job failed unexpectedly', {
        ...log,
        errorName: errorName(error),
      });
    }
    await work.fail(code);
    return failed(code);
  } finally {
    await work.releaseIfHeld();
  }
}
