/**
 * A discrete-event simulation of many vend instances in one process: one true
 * time, each instance its own skewed clock over it, timers that fire in time
 * order only once every task is idle (nothing really sleeps), a store whose
 * calls take time, and a provider whose mints take time and are each recorded
 * with the true time they were sent and the true time their token expires.
 */
import { vi } from 'vitest';
import { StaticCredentials } from '../../functions/adapters/credentials.js';
import { AesGcmSealer } from '../../functions/adapters/sealers.js';
import type { Clock } from '../../functions/core/clock.js';
import type { StoredItem, TokenStore } from '../../functions/core/ports.js';
import type { TokenGrant } from '../../functions/core/provider-client.js';
import {
  type Minter,
  TokenService,
  type TokenServiceConfig,
} from '../../functions/core/token-service.js';
import { MemoryTokenStore } from './memory-store.js';
import { CREDS } from './token-service-fixture.js';

interface Timer {
  readonly at: number;
  readonly seq: number;
  readonly resolve: () => void;
}

/** True time and its timers. */
export class SimTime {
  t: number;
  #timers: Timer[] = [];
  #seq = 0;

  constructor(startMs = 1_800_000_000_000) {
    this.t = startMs;
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.#timers.push({ at: this.t + Math.max(0, ms), seq: this.#seq++, resolve });
    });
  }

  clock(skewMs: number): Clock {
    return { now: () => this.t + skewMs, sleep: (ms) => this.sleep(ms) };
  }

  /** Runs every task until `work` settles, firing timers in time order when all are idle. */
  async run<T>(work: Promise<T>): Promise<T> {
    let done = false;
    const settled = work.finally(() => {
      done = true;
    });
    settled.catch(() => {});
    const startedAt = this.t;
    for (;;) {
      if (this.t - startedAt > 600_000) throw new Error('runaway: still busy 10 minutes on');
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
      if (done) return settled;
      this.#timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.#timers.shift();
      if (!next) throw new Error('deadlock: nothing scheduled and the work is not done');
      this.t = Math.max(this.t, next.at);
      next.resolve();
    }
  }

  /** Advances true time with no timer in between (idle time between bursts). */
  advance(ms: number): void {
    this.t += ms;
  }
}

/** A store whose every call takes `latencyMs` (half before the operation, half after). */
export function slowStore(
  time: SimTime,
  store: TokenStore,
  latencyMs: () => number,
  hooks: { before?: (op: string) => Promise<void> | void } = {},
): TokenStore {
  const wrap =
    <A extends unknown[], R>(op: string, fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const l = latencyMs();
      await time.sleep(l / 2);
      await hooks.before?.(op);
      const out = await fn(...args);
      await time.sleep(l / 2);
      return out;
    };
  return {
    get: wrap('get', (pk: string) => store.get(pk)),
    tryAcquireLease: wrap('tryAcquireLease', (...a: Parameters<TokenStore['tryAcquireLease']>) =>
      store.tryAcquireLease(...a),
    ),
    leaseIfAbsent: wrap('leaseIfAbsent', (...a: Parameters<TokenStore['leaseIfAbsent']>) =>
      store.leaseIfAbsent(...a),
    ),
    putToken: wrap('putToken', (...a: Parameters<TokenStore['putToken']>) => store.putToken(...a)),
    releaseLease: wrap('releaseLease', (...a: Parameters<TokenStore['releaseLease']>) =>
      store.releaseLease(...a),
    ),
    markUsed: wrap('markUsed', (...a: Parameters<TokenStore['markUsed']>) => store.markUsed(...a)),
    delete: wrap('delete', (pk: string) => store.delete(pk)),
    list: wrap('list', () => store.list()),
  };
}

export interface SimMint {
  readonly instance: string;
  readonly scope: string | undefined;
  readonly sentAt: number;
  readonly token: string;
  readonly trueExpiresAt: number;
}

/** A provider whose mints take `latencyMs` of true time; `hang` decides which never answer. */
export function simProvider(
  time: SimTime,
  options: { expiresIn?: number; latencyMs?: () => number } = {},
) {
  const mints: SimMint[] = [];
  const state = { hang: (_instance: string, _n: number) => false };
  const minterFor =
    (instance: string): Minter =>
    async (_credentials, scope): Promise<TokenGrant> => {
      const n = mints.length + 1;
      const token = `tok-${n}`;
      const expiresIn = options.expiresIn ?? 7200;
      mints.push({
        instance,
        scope,
        sentAt: time.t,
        token,
        trueExpiresAt: time.t + expiresIn * 1000,
      });
      if (state.hang(instance, n)) await new Promise(() => {});
      await time.sleep(options.latencyMs?.() ?? 50);
      return { accessToken: token, tokenType: 'Bearer', expiresIn, ...(scope ? { scope } : {}) };
    };
  return { mints, state, minterFor };
}

/** A fleet of token services over one store and provider, each with its own clock skew. */
export function simFleet(
  skewsMs: readonly number[],
  options: {
    config?: TokenServiceConfig;
    expiresIn?: number;
    storeLatencyMs?: () => number;
    mintLatencyMs?: () => number;
    random?: () => number;
  } = {},
) {
  const time = new SimTime();
  const memory = new MemoryTokenStore();
  const store = slowStore(time, memory, options.storeLatencyMs ?? (() => 4));
  const provider = simProvider(time, {
    ...(options.expiresIn === undefined ? {} : { expiresIn: options.expiresIn }),
    ...(options.mintLatencyMs === undefined ? {} : { latencyMs: options.mintLatencyMs }),
  });
  const sealer = new AesGcmSealer();
  const logger = { info: vi.fn(), warn: vi.fn(), error: vi.fn() };
  const instances = skewsMs.map((skew, i) => {
    const id = `i${i}`;
    return new TokenService(
      {
        store,
        sealer,
        credentials: new StaticCredentials(CREDS),
        mint: provider.minterFor(id),
        clock: time.clock(skew),
        random: options.random ?? Math.random,
        logger,
        instanceId: id,
      },
      options.config,
    );
  });
  const item = (scope: string): StoredItem | undefined => memory.items.get(`TOKEN#${scope}`);
  return { time, memory, store, provider, instances, logger, item };
}
