/**
 * The steps of one id under its run lease: keep one Idempotency-Key until the
 * keys are stored, seal the provider's answer into the record before storing
 * it, and store a sealed answer left by an earlier run without calling the
 * provider again.
 */
import { SealerUnavailableError } from '../core/errors.js';
import type { Sealer } from '../core/ports.js';
import { keyJobKey } from './business-application-id.js';
import { type FailureCode, KeysEndpointError } from './errors.js';
import {
  causeName,
  errorName,
  failed,
  failureCodeOf,
  type IdOutcome,
  skippedAsDone,
} from './id-outcome.js';
import type { IssuedKeys } from './keys-endpoint.js';
import { type KeysRequestConfig, type KeysRequestDeps, requestKeys } from './keys-request.js';
import type { KeyJobRecord, KeyJobStore, KeyVault, SealedEncoding } from './ports.js';
import { awaitsStore, forcedByAfterStore, isDone } from './record-rules.js';

export interface IssueForIdDeps extends KeysRequestDeps {
  readonly store: KeyJobStore;
  readonly vault: KeyVault;
  readonly sealer: Sealer;
  /** Makes Idempotency-Keys (UUIDs). */
  readonly uuid: () => string;
  /** This run's lease owner id. */
  readonly owner: string;
  /** Run lease length. */
  readonly leaseMs: number;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The sealer takes text: UTF-8 answers as they are, anything else as base64. */
function sealable(body: Uint8Array): { text: string; encoding: SealedEncoding } {
  try {
    return { text: UTF8.decode(body), encoding: 'utf8' };
  } catch {
    return { text: Buffer.from(body).toString('base64'), encoding: 'base64' };
  }
}

function unsealed(text: string, encoding: SealedEncoding): Uint8Array {
  return Uint8Array.from(Buffer.from(text, encoding));
}

const optionalForcedBy = (forcedBy: string[] | undefined) =>
  forcedBy === undefined ? {} : { forcedBy };

/** The steps taken while this run holds the id's lease. */
export class LeasedWork {
  readonly #deps: IssueForIdDeps;
  readonly #config: KeysRequestConfig;
  readonly #id: string;
  readonly #record: KeyJobRecord;
  #held = true;

  constructor(deps: IssueForIdDeps, config: KeysRequestConfig, id: string, record: KeyJobRecord) {
    this.#deps = deps;
    this.#config = config;
    this.#id = id;
    this.#record = record;
  }

  get #log() {
    return { businessApplicationId: this.#id };
  }

  #leaseUntil(nowMs: number): number {
    return nowMs + this.#deps.leaseMs;
  }

  async run(forceId: string | undefined): Promise<IdOutcome> {
    const record = this.#record;
    const deps = this.#deps;
    const force = forceId !== undefined;
    // Another run stored the keys (or this forced request's) between our read and the lease.
    if (isDone(record, forceId)) return skippedAsDone(deps.logger, this.#id, forceId);

    if (awaitsStore(record)) {
      const body = await this.#unsealedAnswer(record.sealed, force);
      if (body === 'recovery_failed' || body === 'sealer_unavailable') {
        await this.fail(body);
        return failed(body);
      }
      if (body !== 'replay') {
        deps.logger.info('storing the sealed answer of an earlier run; provider not called', {
          ...this.#log,
          idempotencyKey: record.idempotencyKey,
        });
        return this.#store(body, record.idempotencyKey, record.responseStatus ?? 200, {
          recovered: true,
          forceId,
        });
      }
    }

    let idempotencyKey = record.idempotencyKey;
    if (idempotencyKey === undefined) {
      idempotencyKey = deps.uuid();
      const nowMs = deps.clock.now();
      await deps.store.begin(
        this.#id,
        deps.owner,
        idempotencyKey,
        nowMs,
        this.#leaseUntil(nowMs),
        forceId,
      );
    } else {
      // A warning: an earlier attempt was cut short, and this line is where an
      // operator finds the key before clear-pending-key (docs/operations.md).
      deps.logger.warn('reusing the Idempotency-Key of an unfinished issue', {
        ...this.#log,
        idempotencyKey,
        attempts: record.attempts,
      });
    }

    let issued: IssuedKeys;
    try {
      issued = await requestKeys(deps, this.#config, {
        businessApplicationId: this.#id,
        idempotencyKey,
        beforeAttempt: async () => {
          const nowMs = deps.clock.now();
          await deps.store.recordAttempt(this.#id, deps.owner, nowMs, this.#leaseUntil(nowMs));
        },
      });
    } catch (error) {
      const code = failureCodeOf(error);
      // A definitive refusal issued nothing: the next run may start with a new key. A stored
      // key set stays the current one (a refused forced reissue).
      const next =
        error instanceof KeysEndpointError && error.definitive && record.state !== 'received'
          ? record.storedAt === undefined
            ? 'rejected'
            : 'stored'
          : undefined;
      await this.fail(code, next);
      return failed(code);
    }

    await this.#saveRecoveryCopy(issued);
    return this.#store(issued.body, idempotencyKey, issued.status, { recovered: false, forceId });
  }

  /**
   * The sealed answer, 'replay' to call the provider again (force), or the
   * code the id fails with: 'recovery_failed' for a copy that cannot be
   * unsealed, 'sealer_unavailable' when KMS could not answer now (the next
   * run tries again; a forced run replays as for an unreadable copy).
   */
  async #unsealedAnswer(
    sealed: NonNullable<KeyJobRecord['sealed']>,
    force: boolean,
  ): Promise<Uint8Array | 'replay' | 'recovery_failed' | 'sealer_unavailable'> {
    try {
      const text = await this.#deps.sealer.unseal(sealed.blob, keyJobKey(this.#id));
      return unsealed(text, sealed.encoding);
    } catch (error) {
      const name = errorName(error);
      if (!force && error instanceof SealerUnavailableError) {
        this.#deps.logger.warn(
          'KMS could not unseal the sealed answer now; kept, provider not called (the next run tries again)',
          { ...this.#log, errorName: name, cause: causeName(error) },
        );
        return 'sealer_unavailable';
      }
      if (!force) {
        this.#deps.logger.error(
          'the sealed answer cannot be unsealed; kept, provider not called (force replays the request with the same Idempotency-Key)',
          { ...this.#log, errorName: name },
        );
        return 'recovery_failed';
      }
      this.#deps.logger.warn(
        'the sealed answer cannot be unsealed; force: replaying the request with the same Idempotency-Key',
        { ...this.#log, errorName: name },
      );
      return 'replay';
    }
  }

  /** Seals the answer into the record before storing it, so a crash or vault failure loses nothing. */
  async #saveRecoveryCopy(issued: IssuedKeys): Promise<void> {
    const deps = this.#deps;
    try {
      const { text, encoding } = sealable(issued.body);
      const blob = await deps.sealer.seal(text, keyJobKey(this.#id));
      const nowMs = deps.clock.now();
      await deps.store.saveReceived(
        this.#id,
        deps.owner,
        { blob, encoding, status: issued.status },
        nowMs,
        this.#leaseUntil(nowMs),
      );
    } catch (error) {
      // Not fatal, not even a lost lease: the vault store follows (idempotent for this key);
      // if that fails too, the kept Idempotency-Key lets the next run get the same answer
      // replayed by the provider.
      deps.logger.warn('could not keep a sealed copy of the issued keys; storing them directly', {
        ...this.#log,
        errorName: errorName(error),
      });
    }
  }

  async #store(
    body: Uint8Array,
    idempotencyKey: string,
    status: number,
    how: { readonly recovered: boolean; readonly forceId: string | undefined },
  ): Promise<IdOutcome> {
    const deps = this.#deps;
    const { recovered, forceId } = how;
    let stored: { location: string; version: string };
    try {
      stored = await deps.vault.put(this.#id, body, idempotencyKey);
    } catch (error) {
      deps.count('KeyStoreFailures');
      deps.logger.error('issued keys could not be stored; the next run stores them', {
        ...this.#log,
        code: failureCodeOf(error),
        errorName: errorName(error),
        causeName: causeName(error),
      });
      await this.fail('store_failed');
      return failed('store_failed');
    }
    try {
      await deps.store.markStored(
        this.#id,
        deps.owner,
        {
          secretName: stored.location,
          secretVersion: stored.version,
          status,
          ...optionalForcedBy(forcedByAfterStore(this.#record, forceId)),
        },
        deps.clock.now(),
      );
      this.#held = false;
    } catch (error) {
      const code = failureCodeOf(error);
      deps.logger.error(
        'keys stored, but the job record could not say so; the next run stores them again',
        {
          ...this.#log,
          code,
          secretName: stored.location,
        },
      );
      return failed(code);
    }
    deps.logger.info('keys stored', {
      ...this.#log,
      secretName: stored.location,
      secretVersion: stored.version,
      status,
      recovered,
    });
    return { kind: 'issued', recovered };
  }

  /** Records the failure and gives the lease up; a lost lease or a store outage is only logged. */
  async fail(code: FailureCode, next?: 'stored' | 'rejected'): Promise<void> {
    if (!this.#held || code === 'lease_lost') {
      this.#held = false;
      return;
    }
    try {
      await this.#deps.store.recordFailure(
        this.#id,
        this.#deps.owner,
        code,
        this.#deps.clock.now(),
        next,
      );
      this.#held = false;
    } catch (error) {
      if (failureCodeOf(error) === 'lease_lost') this.#held = false;
      this.#deps.logger.warn('could not record the failure on the key job', {
        ...this.#log,
        code,
        errorName: errorName(error),
      });
    }
  }

  async releaseIfHeld(): Promise<void> {
    if (!this.#held) return;
    this.#held = false;
    await this.#deps.store.release(this.#id, this.#deps.owner).catch((error: unknown) => {
      this.#deps.logger.warn('could not release the key job lease; it runs out by itself', {
        ...this.#log,
        errorName: errorName(error),
      });
    });
  }
}
