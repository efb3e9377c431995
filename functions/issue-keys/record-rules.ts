/** What a key job record says about an id: stored, done for a forced request, known. */
import { type KeyJobRecord, MAX_FORCED_REQUESTS } from './ports.js';

/** Keys count as stored once a set is in the vault and no newer answer waits to be stored. */
export const isStored = (record: KeyJobRecord | undefined): boolean => record?.state === 'stored';

/**
 * Nothing to do for this id: its keys are stored and the run is not forced, or
 * the forced request `forceId` had its new key set stored already (this run
 * is a retry of it).
 */
export const isDone = (record: KeyJobRecord | undefined, forceId: string | undefined): boolean =>
  isStored(record) && (forceId === undefined || (record?.forcedBy ?? []).includes(forceId));

/**
 * The forced requests a key set stored now satisfies, added to the record's:
 * the one its Idempotency-Key was taken for, and this run's. Undefined when
 * neither is forced (the record's list stays as it is).
 */
export function forcedByAfterStore(
  record: KeyJobRecord,
  forceId: string | undefined,
): string[] | undefined {
  const added = [record.forceId, forceId].filter((f): f is string => f !== undefined);
  if (added.length === 0) return undefined;
  const kept = (record.forcedBy ?? []).filter((f) => !added.includes(f));
  return [...kept, ...new Set(added)].slice(-MAX_FORCED_REQUESTS);
}

/**
 * The record neither knows of stored keys nor holds an issue in progress: there
 * is none, or only a refused one that never stored anything. Only the vault can
 * tell then whether keys are stored.
 */
export const knowsNothingStored = (record: KeyJobRecord | undefined): boolean =>
  record === undefined || (record.state === 'rejected' && record.storedAt === undefined);

/**
 * The provider's answer waits, sealed in the record with the Idempotency-Key
 * it was issued under, to be stored: no provider call is needed.
 */
export const awaitsStore = (
  record: KeyJobRecord | undefined,
): record is KeyJobRecord & Required<Pick<KeyJobRecord, 'sealed' | 'idempotencyKey'>> =>
  record?.state === 'received' &&
  record.sealed !== undefined &&
  record.idempotencyKey !== undefined;
