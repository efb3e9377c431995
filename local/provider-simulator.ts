/**
 * Provider simulator: a node:http server on loopback that follows
 * shared/provider-auth-interface.md to the letter (token endpoint 4.1 and the partner
 * key-issuing endpoint 4.2), with fault injection, counters and a secret-free request log
 * for tests and for the local stack (`npm start`).
 *
 * Where the document says "not shown" (error bodies, status codes, unscoped request form,
 * key-issuing payloads), the simulator uses OAuth 2.0 (RFC 6749 / RFC 6750) conventions.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  createServer,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { StringDecoder } from 'node:string_decoder';
import { pathToFileURL } from 'node:url';

export type UnscopedMode = 'omit' | 'empty' | 'either';
export type CreatedAtUnit = 's' | 'ms';

export interface ProviderCredentials {
  key: string;
  secret: string;
}

export interface SimulatorOptions {
  /** Default 0 (random free port). */
  port?: number;
  /** Default '127.0.0.1'. */
  host?: string;
  /** Default DEMO_PROVIDER_CREDENTIALS. */
  credentials?: ProviderCredentials;
  /** Business application ids usable as scopes and as path ids. Default ['ba_demo_1', 'ba_demo_2']. */
  allowedScopes?: string[];
  /** How an unscoped token is requested. Default 'either'. */
  unscopedMode?: UnscopedMode;
  /** Partner feature flag for 4.2. Default true. */
  keyIssuingEnabled?: boolean;
  /** Token lifetime in seconds. Default 7200. */
  expiresIn?: number;
  /** Unit of created_at in token responses. Default 's'. */
  createdAtUnit?: CreatedAtUnit;
  /** Millisecond clock. Default Date.now. */
  now?: () => number;
}

export type MutableSimulatorOptions = Partial<
  Pick<
    SimulatorOptions,
    'expiresIn' | 'createdAtUnit' | 'keyIssuingEnabled' | 'unscopedMode' | 'allowedScopes'
  >
>;

export type TokenFault =
  | { kind: 'latency'; ms: number }
  | { kind: 'status'; status: number; retryAfter?: number; body?: unknown }
  | { kind: 'malformed' }
  | { kind: 'wrongScope' }
  | { kind: 'wrongTokenType' }
  | { kind: 'missingExpiresIn' }
  | { kind: 'expiresIn'; value: number }
  | { kind: 'hang' }
  /** The connection is reset (TCP RST) before any answer: the client sees a network error. */
  | { kind: 'reset' };

export type KeysFault =
  | { kind: 'latency'; ms: number }
  | { kind: 'status'; status: number; retryAfter?: number; body?: unknown }
  | { kind: 'malformed' }
  | { kind: 'hang' }
  /** The connection is reset (TCP RST) before any answer. */
  | { kind: 'reset' }
  /**
   * The request is processed in full (keys issued, idempotency record kept), then the
   * connection is destroyed before any answer: the client sees a network error after
   * the provider committed.
   */
  | { kind: 'dropAfterCommit' };

export interface SimulatorStats {
  tokenRequests: number;
  tokensIssued: number;
  keyRequests: number;
  keysIssued: number;
  /** Token requests with a parseable form body, by requested scope; unscoped under ''. */
  tokenRequestsByScope: Record<string, number>;
}

/** One received request. Never holds the Authorization header, tokens, keys or secrets. */
export interface RecordedRequest {
  readonly method: string;
  /** Path without query string. */
  readonly path: string;
  readonly endpoint: 'token' | 'keys' | 'other';
  /** Requested scope on token requests: '' when sent empty, absent when not sent. */
  readonly scope?: string;
  /** Response status; 0 when never answered (hang fault, client gone). */
  readonly status: number;
  readonly idempotencyKey?: string;
  /** Kind of the injected fault that this request consumed, if any. */
  readonly fault?: TokenFault['kind'] | KeysFault['kind'];
  /** Arrival time, ms, from the simulator clock. */
  readonly time: number;
}

export interface ProviderSimulator {
  /** e.g. http://127.0.0.1:PORT (no trailing slash). */
  readonly url: string;
  close(): Promise<void>;
  /** Queue a fault for the next `times` (default 1) token requests; Infinity for persistent. FIFO. */
  injectTokenFault(fault: TokenFault, times?: number): void;
  /** Queue a fault for the next `times` (default 1) key-issuing requests. FIFO. */
  injectKeysFault(fault: KeysFault, times?: number): void;
  clearFaults(): void;
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

export const DEMO_PROVIDER_CREDENTIALS: Readonly<ProviderCredentials> = Object.freeze({
  key: 'sim_demo_key',
  secret: 'sim_demo_secret_local_only',
});
export const DEFAULT_ALLOWED_SCOPES: readonly string[] = Object.freeze(['ba_demo_1', 'ba_demo_2']);
export const DEFAULT_EXPIRES_IN = 7200;
export const MAX_BODY_BYTES = 64 * 1024;

const TOKEN_PATH = '/oauth/token';
const KEYS_PATH = /^\/partner\/v1\/basic_auth\/business_applications\/([^/]+)\/keys$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const MAX_TOKENS = 10_000;
const MAX_RECORDED = 10_000;

interface Config {
  allowedScopes: string[];
  unscopedMode: UnscopedMode;
  keyIssuingEnabled: boolean;
  expiresIn: number;
  createdAtUnit: CreatedAtUnit;
}

interface QueuedFault<F> {
  fault: F;
  remaining: number;
}

interface IdempotencyRecord {
  id: string;
  status: number;
  body: string;
}

interface Reply {
  status: number;
  /** Objects are sent as JSON; strings as given (with the content type in headers). */
  body: unknown;
  headers?: OutgoingHttpHeaders;
}

type BodyRead = { kind: 'ok'; body: string } | { kind: 'tooLarge' } | { kind: 'aborted' };

function error(status: number, code: string, description?: string, headers?: OutgoingHttpHeaders) {
  const body: Record<string, string> = { error: code };
  if (description !== undefined) body.error_description = description;
  return { status, body, headers } satisfies Reply;
}

function digest(value: string, encoding: 'latin1' | 'utf8'): Uint8Array {
  return Uint8Array.from(createHash('sha256').update(value, encoding).digest());
}

/** Constant-time check of `Basic base64(key:secret)` against the configured pair. */
function basicMatches(header: string | undefined, creds: ProviderCredentials): boolean | null {
  if (header === undefined) return null;
  const match = /^Basic ([^\s]+)$/i.exec(header.trim());
  if (!match?.[1] || !BASE64.test(match[1])) return false;
  const decoded = Buffer.from(match[1], 'base64').toString('latin1');
  if (!decoded.includes(':')) return false;
  return timingSafeEqual(digest(decoded, 'latin1'), digest(`${creds.key}:${creds.secret}`, 'utf8'));
}

function readBody(req: IncomingMessage, limit: number): Promise<BodyRead> {
  return new Promise((resolve) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      req.resume();
      resolve({ kind: 'tooLarge' });
      return;
    }
    const decoder = new StringDecoder('utf8');
    let text = '';
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) text += decoder.write(chunk);
    });
    req.on('end', () =>
      resolve(size > limit ? { kind: 'tooLarge' } : { kind: 'ok', body: text + decoder.end() }),
    );
    req.on('error', () => resolve({ kind: 'aborted' }));
    req.on('close', () => resolve({ kind: 'aborted' }));
  });
}

function isForm(contentType: string | undefined): boolean {
  const media = contentType?.split(';', 1)[0]?.trim().toLowerCase();
  return media === 'application/x-www-form-urlencoded';
}

/**
 * The key-issuing payload is not shown in the provider document: any body is accepted,
 * but a non-empty one must be a JSON object sent as application/json.
 */
function keysPayloadProblem(contentType: string | undefined, body: string): Reply | undefined {
  if (body === '') return undefined;
  const media = contentType?.split(';', 1)[0]?.trim().toLowerCase();
  if (media !== 'application/json') {
    return error(415, 'invalid_request', 'a request body must be sent as application/json');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return error(400, 'invalid_request', 'the request body is not valid JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return error(400, 'invalid_request', 'the request body must be a JSON object');
  }
  return undefined;
}

function defaultFaultError(status: number): string {
  if (status === 401) return 'invalid_client';
  if (status === 429) return 'too_many_requests';
  if (status === 503) return 'temporarily_unavailable';
  if (status >= 500) return 'server_error';
  return 'invalid_request';
}

function statusFaultReply(fault: { status: number; retryAfter?: number; body?: unknown }): Reply {
  const headers: OutgoingHttpHeaders = {};
  if (fault.retryAfter !== undefined) headers['retry-after'] = String(fault.retryAfter);
  if (fault.status === 401) headers['www-authenticate'] = 'Basic realm="provider"';
  if (typeof fault.body === 'string') headers['content-type'] = 'text/plain; charset=utf-8';
  const body = fault.body ?? {
    error: defaultFaultError(fault.status),
    error_description: 'injected fault',
  };
  return { status: fault.status, body, headers };
}

function takeFault<F>(queue: QueuedFault<F>[]): F | undefined {
  const head = queue[0];
  if (!head) return undefined;
  head.remaining -= 1;
  if (head.remaining <= 0) queue.shift();
  return head.fault;
}

function queueFault<F>(queue: QueuedFault<F>[], fault: F, times: number): void {
  if (!(times > 0) || (!Number.isInteger(times) && times !== Number.POSITIVE_INFINITY)) {
    throw new RangeError(`times must be a positive integer or Infinity, got ${times}`);
  }
  queue.push({ fault: structuredClone(fault), remaining: times });
}

function configFrom(options: SimulatorOptions): Config {
  return {
    allowedScopes: [...(options.allowedScopes ?? DEFAULT_ALLOWED_SCOPES)],
    unscopedMode: options.unscopedMode ?? 'either',
    keyIssuingEnabled: options.keyIssuingEnabled ?? true,
    expiresIn: options.expiresIn ?? DEFAULT_EXPIRES_IN,
    createdAtUnit: options.createdAtUnit ?? 's',
  };
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
  const tokens = new Map<string, { scope: string; expiresAtMs: number }>();
  const idempotency = new Map<string, IdempotencyRecord>();
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;

  function emptyStats(): SimulatorStats {
    return {
      tokenRequests: 0,
      tokensIssued: 0,
      keyRequests: 0,
      keysIssued: 0,
      tokenRequestsByScope: {},
    };
  }

  function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });
  }

  function record(entry: RecordedRequest): void {
    if (recorded.length >= MAX_RECORDED) recorded.shift();
    recorded.push(Object.freeze(entry));
  }

  function send(res: ServerResponse, reply: Reply): void {
    if (res.destroyed || res.writableEnded) return;
    const raw = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
    const headers: OutgoingHttpHeaders = {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-store',
      ...reply.headers,
      'content-length': Buffer.byteLength(raw),
    };
    res.writeHead(reply.status, headers);
    res.end(raw);
  }

  function pruneTokens(): void {
    if (tokens.size < MAX_TOKENS) return;
    const t = now();
    for (const [token, info] of tokens) if (info.expiresAtMs <= t) tokens.delete(token);
    while (tokens.size >= MAX_TOKENS) {
      const oldest = tokens.keys().next().value;
      if (oldest === undefined) break;
      tokens.delete(oldest);
    }
  }

  function wrongScopeFor(requested: string): string {
    return config.allowedScopes.find((s) => s !== requested) ?? `${requested || 'ba'}_wrong`;
  }

  /** 4.1: validates a token request (after faults) and issues the token. */
  function issueToken(req: IncomingMessage, body: string, fault: TokenFault | undefined): Reply {
    const auth = basicMatches(req.headers.authorization, credentials);
    if (auth !== true) {
      const description =
        auth === null
          ? 'Authorization header with Basic client credentials is required'
          : 'client authentication failed';
      return error(401, 'invalid_client', description, {
        'www-authenticate': 'Basic realm="provider"',
      });
    }
    if (!isForm(req.headers['content-type'])) {
      return error(
        415,
        'invalid_request',
        'Content-Type must be application/x-www-form-urlencoded',
      );
    }
    const params = new URLSearchParams(body);
    const seen = new Set<string>();
    for (const name of params.keys()) {
      if (seen.has(name)) return error(400, 'invalid_request', `parameter ${name} is repeated`);
      seen.add(name);
    }
    const grantType = params.get('grant_type');
    if (grantType === null || grantType === '') {
      return error(400, 'invalid_request', 'grant_type is required');
    }
    if (grantType !== 'client_credentials') {
      return error(400, 'unsupported_grant_type', 'only client_credentials is supported');
    }
    const scope = params.get('scope');
    if (scope === null) {
      if (config.unscopedMode === 'empty') {
        return error(
          400,
          'invalid_request',
          'scope is required; send it empty for an unscoped token',
        );
      }
    } else if (scope === '') {
      if (config.unscopedMode === 'omit') {
        return error(
          400,
          'invalid_scope',
          'scope must not be empty; omit it for an unscoped token',
        );
      }
    } else if (!config.allowedScopes.includes(scope)) {
      return error(400, 'invalid_scope', 'the requested scope is not allowed for this client');
    }

    const grantedScope = scope ?? '';
    const issuedAtMs = now();
    const expiresIn = fault?.kind === 'expiresIn' ? fault.value : config.expiresIn;
    const accessToken = `sim_${randomBytes(32).toString('base64url')}`;
    pruneTokens();
    tokens.set(accessToken, { scope: grantedScope, expiresAtMs: issuedAtMs + expiresIn * 1000 });
    stats.tokensIssued += 1;

    const response: Record<string, unknown> = {
      access_token: accessToken,
      token_type: fault?.kind === 'wrongTokenType' ? 'mac' : 'Bearer',
      expires_in: expiresIn,
      scope: fault?.kind === 'wrongScope' ? wrongScopeFor(grantedScope) : grantedScope,
      created_at: config.createdAtUnit === 'ms' ? issuedAtMs : Math.floor(issuedAtMs / 1000),
    };
    if (fault?.kind === 'missingExpiresIn') delete response.expires_in;
    return { status: 200, body: response, headers: { pragma: 'no-cache' } };
  }

  /** 4.2: validates a key-issuing request (after faults) and issues keys. */
  function issueKeys(
    req: IncomingMessage,
    id: string,
    idempotencyKey: string | undefined,
    body: string,
  ): Reply {
    const bearer = /^Bearer ([^\s]+)$/i.exec(req.headers.authorization?.trim() ?? '')?.[1];
    const challenge = (code: string) => ({
      'www-authenticate': `Bearer realm="provider", error="${code}"`,
    });
    if (bearer === undefined) {
      return error(401, 'invalid_token', 'Bearer access token required', {
        'www-authenticate': 'Bearer realm="provider"',
      });
    }
    const info = tokens.get(bearer);
    if (!info)
      return error(401, 'invalid_token', 'unknown access token', challenge('invalid_token'));
    if (info.expiresAtMs <= now()) {
      return error(401, 'invalid_token', 'access token expired', challenge('invalid_token'));
    }
    if (info.scope !== '') {
      return error(
        403,
        'insufficient_scope',
        'the Partner API requires an unscoped token',
        challenge('insufficient_scope'),
      );
    }
    if (!config.keyIssuingEnabled) {
      return error(
        403,
        'feature_not_enabled',
        'Basic Auth key issuing is not enabled for this partner; contact customer success',
      );
    }
    if (idempotencyKey !== undefined && !UUID.test(idempotencyKey)) {
      return error(400, 'invalid_request', 'Idempotency-Key must be a UUID');
    }
    const payloadProblem = keysPayloadProblem(req.headers['content-type'], body);
    if (payloadProblem) return payloadProblem;
    if (idempotencyKey !== undefined) {
      const previous = idempotency.get(idempotencyKey.toLowerCase());
      if (previous && previous.id !== id) {
        return error(422, 'idempotency_key_reused', 'Idempotency-Key was used for another request');
      }
      if (previous) {
        return {
          status: previous.status,
          body: previous.body,
          headers: { 'idempotent-replayed': 'true' },
        };
      }
    }
    let reply: Reply;
    if (config.allowedScopes.includes(id)) {
      stats.keysIssued += 1;
      reply = {
        status: 201,
        body: JSON.stringify({
          business_application_id: id,
          key: `bak_${randomBytes(24).toString('base64url')}`,
          secret: `bas_${randomBytes(32).toString('base64url')}`,
          created_at: Math.floor(now() / 1000),
        }),
      };
    } else {
      reply = {
        status: 404,
        body: JSON.stringify({
          error: 'not_found',
          error_description: 'unknown business application',
        }),
      };
    }
    if (idempotencyKey !== undefined) {
      idempotency.set(idempotencyKey.toLowerCase(), {
        id,
        status: reply.status,
        body: reply.body as string,
      });
    }
    return reply;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const time = now();
    const method = req.method ?? 'GET';
    const path = (req.url ?? '/').split('?', 1)[0] ?? '/';
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
      record({
        ...base,
        ...(scope !== undefined && { scope }),
        ...(faultKind !== undefined && { fault: faultKind }),
        status: answered && reply ? reply.status : 0,
      });
    };

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
      return finish(issueToken(req, read.body, fault as TokenFault | undefined));
    }
    let id: string;
    try {
      id = decodeURIComponent(keysMatch?.[1] ?? '');
    } catch {
      return finish(error(404, 'not_found', 'unknown business application'));
    }
    const reply = issueKeys(req, id, idempotencyKey, read.body);
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
      queueFault(tokenFaults, fault, times);
    },
    injectKeysFault(fault: KeysFault, times = 1): void {
      queueFault(keysFaults, fault, times);
    },
    clearFaults(): void {
      tokenFaults = [];
      keysFaults = [];
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
      return { ...stats, tokenRequestsByScope: { ...stats.tokenRequestsByScope } };
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
