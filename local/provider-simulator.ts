/**
 * Provider simulator: a node:http server on loopback that follows
 * the provider's interface document to the letter (token endpoint and the partner
 * key-issuing endpoint), with fault injection, counters and a secret-free request log
 * for tests and for the local stack (`npm start`).
 *
 * Where the document says "not shown" (error bodies, status codes, unscoped request form,
 * key-issuing payloads), the simulator uses OAuth 2.0 (RFC 6749 / RFC 6750) conventions.
 *
 * This module is the server wiring and the public API: routing, applying injected faults,
 * the control methods. The concerns live beside it: simulator-config.ts (options,
 * defaults), simulator-token-endpoint.ts (4.1), simulator-keys-endpoint.ts (4.2),
 * simulator-faults.ts (fault types and queue), simulator-stats.ts (counters, request log),
 * simulator-http.ts (body reading, replies).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import {
  type Config,
  configFrom,
  DEMO_PROVIDER_CREDENTIALS,
  type MutableSimulatorOptions,
  type ProviderCredentials,
  type SimulatorOptions,
} from './simulator-config.js';
import { CONTROL_PREFIX, controlReply, type FaultEndpoint } from './simulator-control.js';
import {
  type KeysFault,
  pendingFaults,
  type QueuedFault,
  queueFault,
  statusFaultReply,
  type TokenFault,
  takeFault,
} from './simulator-faults.js';
import { error, isForm, MAX_BODY_BYTES, type Reply, readBody, send } from './simulator-http.js';
import { type IdempotencyRecord, issueKeys, KEYS_PATH } from './simulator-keys-endpoint.js';
import {
  emptyStats,
  type RecordedRequest,
  record,
  type SimulatorStats,
} from './simulator-stats.js';
import { type IssuedToken, issueToken, TOKEN_PATH } from './simulator-token-endpoint.js';

export {
  type CreatedAtUnit,
  DEFAULT_ALLOWED_SCOPES,
  DEFAULT_EXPIRES_IN,
  DEMO_PROVIDER_CREDENTIALS,
  type MutableSimulatorOptions,
  type ProviderCredentials,
  type SimulatorOptions,
  type UnscopedMode,
} from './simulator-config.js';
export type { FaultEndpoint, PendingFaults } from './simulator-control.js';
export type { KeysFault, PendingFault, TokenFault } from './simulator-faults.js';
export { MAX_BODY_BYTES } from './simulator-http.js';
export type { RecordedRequest, SimulatorStats } from './simulator-stats.js';

export interface ProviderSimulator {
  /** e.g. http://127.0.0.1:PORT (no trailing slash). */
  readonly url: string;
  close(): Promise<void>;
  /** Queue a fault for the next `times` (default 1) token requests; Infinity for persistent. FIFO. */
  injectTokenFault(fault: TokenFault, times?: number): void;
  /** Queue a fault for the next `times` (default 1) key-issuing requests. FIFO. */
  injectKeysFault(fault: KeysFault, times?: number): void;
  /** Clears the pending faults of `endpoint`, or of both. */
  clearFaults(endpoint?: FaultEndpoint): void;
  /** Rotation: the old pair is rejected from now on. */
  setCredentials(creds: ProviderCredentials): void;
  /** Revokes every access token issued so far: each is answered 401 invalid_token from now on. */
  revokeTokens(): void;
  setOptions(patch: MutableSimulatorOptions): void;
  /** Snapshot of the counters. */
  readonly stats: SimulatorStats;
  /** Snapshot of the request log. */
  readonly requests: ReadonlyArray<RecordedRequest>;
  /**
   * Clears stats, requests, faults, issued tokens and idempotency records, and restores the
   * credentials and options given to startProviderSimulator.
   */
  reset(): void;
}

export async function startProviderSimulator(
  options: SimulatorOptions = {},
): Promise<ProviderSimulator> {
  const now = options.now ?? Date.now;
  const host = options.host ?? '127.0.0.1';
  const initialCredentials = { ...(options.credentials ?? DEMO_PROVIDER_CREDENTIALS) };

  let credentials = { ...initialCredentials };
  let config = configFrom(options);
  let stats = emptyStats();
  let recorded: RecordedRequest[] = [];
  let tokenFaults: QueuedFault<TokenFault>[] = [];
  let keysFaults: QueuedFault<KeysFault>[] = [];
  const tokens = new Map<string, IssuedToken>();
  const idempotency = new Map<string, IdempotencyRecord>();
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;

  /** What the endpoints read and update: getters, so that reset() and the setters apply. */
  const state = {
    now,
    tokens,
    idempotency,
    get credentials(): ProviderCredentials {
      return credentials;
    },
    get config(): Config {
      return config;
    },
    get stats(): SimulatorStats {
      return stats;
    },
  };

  function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });
  }

  /** What the control endpoint (simulator-control.ts) may do. */
  const control = {
    injectTokenFault: (fault: TokenFault, times: number) => queueFault(tokenFaults, fault, times),
    injectKeysFault: (fault: KeysFault, times: number) => queueFault(keysFaults, fault, times),
    pendingFaults: () => ({ token: pendingFaults(tokenFaults), keys: pendingFaults(keysFaults) }),
    clearFaults(endpoint?: FaultEndpoint): void {
      if (endpoint !== 'keys') tokenFaults = [];
      if (endpoint !== 'token') keysFaults = [];
    },
    get stats(): SimulatorStats {
      return { ...stats, tokenRequestsByScope: { ...stats.tokenRequestsByScope } };
    },
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const time = now();
    const method = req.method ?? 'GET';
    const target = req.url ?? '/';
    const queryAt = target.indexOf('?');
    const path = queryAt === -1 ? target : target.slice(0, queryAt);
    const rawQuery = queryAt === -1 ? '' : target.slice(queryAt + 1);
    const keysMatch = KEYS_PATH.exec(path);
    const endpoint = path === TOKEN_PATH ? 'token' : keysMatch ? 'keys' : 'other';
    const rawIdem = req.headers['idempotency-key'];
    const idempotencyKey = typeof rawIdem === 'string' ? rawIdem.slice(0, 100) : undefined;
    const base = {
      method,
      path: path.slice(0, 500),
      endpoint,
      time,
      ...(idempotencyKey !== undefined && { idempotencyKey }),
    } as const;

    let scope: string | undefined;
    let faultKind: RecordedRequest['fault'];
    const finish = (reply: Reply | null): void => {
      const answered = reply !== null && !res.destroyed && !res.writableEnded;
      if (reply) send(res, reply);
      record(recorded, {
        ...base,
        ...(scope !== undefined && { scope }),
        ...(faultKind !== undefined && { fault: faultKind }),
        status: answered && reply ? reply.status : 0,
      });
    };

    if (endpoint === 'other' && path.startsWith(CONTROL_PREFIX)) {
      const read = await readBody(req, MAX_BODY_BYTES);
      if (read.kind !== 'ok') return finish(error(400, 'invalid_request', 'unreadable body'));
      return finish(controlReply(control, method, path, rawQuery, read.body));
    }
    if (endpoint === 'other') {
      req.resume();
      return finish(error(404, 'not_found', 'no such resource'));
    }
    if (method !== 'POST') {
      req.resume();
      return finish({
        ...error(405, 'method_not_allowed', 'use POST'),
        headers: { allow: 'POST' },
      });
    }

    if (endpoint === 'token') stats.tokenRequests += 1;
    else stats.keyRequests += 1;

    const read = await readBody(req, MAX_BODY_BYTES);
    if (read.kind === 'aborted') return finish(null);
    if (read.kind === 'tooLarge') {
      return finish({
        ...error(413, 'invalid_request', `request body exceeds ${MAX_BODY_BYTES} bytes`),
        headers: { connection: 'close' },
      });
    }

    if (endpoint === 'token' && isForm(req.headers['content-type'])) {
      const requested = new URLSearchParams(read.body).get('scope');
      if (requested !== null) scope = requested.slice(0, 200);
      const bucket = requested ?? '';
      stats.tokenRequestsByScope[bucket] = (stats.tokenRequestsByScope[bucket] ?? 0) + 1;
    }

    const fault = endpoint === 'token' ? takeFault(tokenFaults) : takeFault(keysFaults);
    faultKind = fault?.kind;
    if (fault?.kind === 'hang') {
      // Never answered; close() destroys the socket.
      return finish(null);
    }
    if (fault?.kind === 'reset') {
      req.socket.resetAndDestroy();
      return finish(null);
    }
    if (fault?.kind === 'latency') {
      await sleep(fault.ms);
      if (closed) return;
    }
    if (fault?.kind === 'status') return finish(statusFaultReply(fault));
    if (fault?.kind === 'malformed') {
      return finish({
        status: endpoint === 'token' ? 200 : 201,
        body: '{"access_token": "sim_trunc',
      });
    }

    if (endpoint === 'token') {
      return finish(issueToken(state, req, read.body, fault as TokenFault | undefined));
    }
    let id: string;
    try {
      id = decodeURIComponent(keysMatch?.[1] ?? '');
    } catch {
      return finish(error(404, 'not_found', 'unknown business application'));
    }
    const reply = issueKeys(state, req, id, idempotencyKey, read.body);
    if (fault?.kind === 'dropAfterCommit') {
      // Committed above; the answer is lost on the way back.
      res.destroy();
      return finish(null);
    }
    return finish(reply);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      send(res, error(500, 'server_error', 'simulator failure'));
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  return {
    url,
    close(): Promise<void> {
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
    injectTokenFault(fault: TokenFault, times = 1): void {
      control.injectTokenFault(fault, times);
    },
    injectKeysFault(fault: KeysFault, times = 1): void {
      control.injectKeysFault(fault, times);
    },
    clearFaults(endpoint?: FaultEndpoint): void {
      control.clearFaults(endpoint);
    },
    setCredentials(creds: ProviderCredentials): void {
      credentials = { key: creds.key, secret: creds.secret };
    },
    revokeTokens(): void {
      tokens.clear();
    },
    setOptions(patch: MutableSimulatorOptions): void {
      const defined = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
      config = { ...config, ...defined };
      if (patch.allowedScopes) config.allowedScopes = [...patch.allowedScopes];
    },
    get stats(): SimulatorStats {
      return control.stats;
    },
    get requests(): ReadonlyArray<RecordedRequest> {
      return [...recorded];
    },
    reset(): void {
      stats = emptyStats();
      recorded = [];
      tokenFaults = [];
      keysFaults = [];
      tokens.clear();
      idempotency.clear();
      credentials = { ...initialCredentials };
      config = configFrom(options);
    },
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const sim = await startProviderSimulator({ port: Number(process.env.PORT ?? 8788) });
  console.log(`provider simulator on ${sim.url} (key ${DEMO_PROVIDER_CREDENTIALS.key})`);
  const stop = () => void sim.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
