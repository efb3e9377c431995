/**
 * The agent's HTTP server: the vend API on loopback for services that neither
 * sign requests nor use the library, modelled on the AWS Secrets Manager
 * Agent. `GET /token` answers as the vend URL does, from one shared
 * TokenVendingClient (so the library's cache rules hold for every caller of
 * the agent); each request but `GET /healthz` must carry the agent token
 * header, which a forged request from elsewhere (SSRF) cannot know.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CliError, unexpected } from './cli-error.js';
import { TokenVendingError } from './errors.js';
import type { TokenVendingClient } from './token-vending-client.js';
import { MAX_MIN_TTL, minTtlValue, type ProblemCode, SCOPE_PATTERN } from './vend-api.js';
import { vendBody } from './vend-body.js';

/** The header carrying the agent token, as the Secrets Manager Agent's `X-Aws-Parameters-Secrets-Token`. */
export const AGENT_TOKEN_HEADER = 'X-Token-Vending-Agent-Token';
/** The Secrets Manager Agent's port: a service's network rules made for one suit the other. */
export const DEFAULT_AGENT_PORT = 2773;
/** Loopback only: never reachable from another host. */
export const AGENT_HOST = '127.0.0.1';

export interface AgentOptions {
  /** The one client every request is served through: one cache, one flight per scope. */
  readonly client: TokenVendingClient;
  readonly agentToken: string;
  /** 0 picks a free port. */
  readonly port: number;
  /** Receives one line per request (never a token). */
  readonly log: (line: Readonly<Record<string, unknown>>) => void;
  /** Default: real time. */
  readonly clock?: { now(): number };
}

export interface RunningAgent {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  /** Stops accepting requests, ends idle connections, and resolves once the server closed. */
  close(): Promise<void>;
}

interface Answer {
  readonly status: number;
  readonly body: unknown;
  readonly headers?: Readonly<Record<string, string>>;
  /** For the log line. */
  readonly code?: string;
  readonly scope?: string;
  readonly fingerprint?: string;
  readonly error?: string;
}

const STATUS_OF: Readonly<Record<ProblemCode, number>> = {
  invalid_request: 400,
  unauthenticated: 401,
  access_denied: 403,
  not_found: 404,
  method_not_allowed: 405,
  upstream_credentials_rejected: 502,
  upstream_error: 502,
  upstream_unavailable: 503,
  internal_error: 500,
};

/** The vend function's token fingerprint: the first 16 hex digits of the token's SHA-256. */
const fingerprint = (token: string): string =>
  createHash('sha256').update(token, 'utf8').digest('hex').slice(0, 16);

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

function problem(
  code: ProblemCode,
  title: string,
  detail?: string,
  headers: Record<string, string> = {},
): Answer {
  const status = STATUS_OF[code];
  return {
    status,
    code,
    headers: { 'content-type': 'application/problem+json', ...headers },
    body: { status, code, title, ...(detail ? { detail } : {}) },
  };
}

/**
 * A client failure as the vend API's problem: its own codes pass through; the
 * client's codes become the vend API's (no answer, throttled: 503
 * `upstream_unavailable`; an unusable answer: 502 `upstream_error`; no AWS
 * credentials: 500 `internal_error`), naming the client's code in `detail`.
 * Never a token: the client's errors hold none.
 */
export function problemFor(error: TokenVendingError): Answer {
  const detail = error.detail ?? `${error.code}: ${error.title}`;
  const retry = (seconds: number | undefined) => ({ 'retry-after': String(seconds ?? 1) });
  switch (error.code) {
    case 'upstream_unavailable':
      return problem(error.code, error.title, detail, retry(error.retryAfter));
    case 'throttled':
    case 'timeout':
    case 'network_error':
      return problem(
        'upstream_unavailable',
        'The vend URL is unavailable',
        detail,
        retry(error.retryAfter),
      );
    case 'invalid_response':
    case 'unexpected_response':
      return problem('upstream_error', 'The vend URL answered something unusable', detail);
    case 'credentials_unavailable':
    case 'invalid_config':
      return problem('internal_error', 'The agent cannot sign its requests', detail);
    default:
      return problem(error.code, error.title, error.detail);
  }
}

/** The checked query of `GET /token`, or the 400 to answer. */
function tokenQuery(
  search: URLSearchParams,
): { scope?: string; minTtl?: number; revoked?: string } | Answer {
  const seen = new Set<string>();
  for (const name of search.keys()) {
    if (!['scope', 'min_ttl', 'revoked'].includes(name)) {
      // The vend API's words: nothing the caller sent, not even a parameter name.
      return problem(
        'invalid_request',
        'Invalid request',
        'Unknown parameter; use scope, min_ttl and revoked.',
      );
    }
    if (seen.has(name))
      return problem('invalid_request', 'Invalid request', `Parameter "${name}" is repeated.`);
    seen.add(name);
  }
  const scope = search.get('scope') ?? undefined;
  if (scope !== undefined && !SCOPE_PATTERN.test(scope)) {
    return problem(
      'invalid_request',
      'Invalid request',
      `scope must match ${SCOPE_PATTERN.source}`,
    );
  }
  const minTtlText = search.get('min_ttl') ?? undefined;
  const minTtl = minTtlText === undefined ? undefined : minTtlValue(minTtlText);
  if (minTtlText !== undefined && minTtl === undefined) {
    return problem(
      'invalid_request',
      'Invalid request',
      `min_ttl must be an integer from 0 to ${MAX_MIN_TTL}`,
    );
  }
  const revoked = search.get('revoked') ?? undefined;
  if (revoked !== undefined && !/^[0-9a-f]{16}$/.test(revoked)) {
    return problem(
      'invalid_request',
      'Invalid request',
      'revoked must be a token fingerprint (16 hex digits)',
    );
  }
  return {
    ...(scope !== undefined ? { scope } : {}),
    ...(minTtl !== undefined ? { minTtl } : {}),
    ...(revoked !== undefined ? { revoked } : {}),
  };
}

/** Any method but GET (and HEAD for /healthz), answered as the vend API answers it. */
function methodNotAllowed(): Answer {
  return problem('method_not_allowed', 'Method not allowed', 'Use GET.', { allow: 'GET' });
}

/** What went wrong inside the agent: the caller gets the code, the agent's log the reason. */
function internalError(reason: string): Answer {
  return {
    ...problem(
      'internal_error',
      'Internal error',
      "An internal error occurred; see the agent's log.",
    ),
    error: reason,
  };
}

/** The request target against a placeholder origin; undefined when it is no URL (URL.parse needs Node 20.18). */
function requestUrl(target: string | undefined): URL | undefined {
  try {
    return new URL(target ?? '/', 'http://agent.invalid');
  } catch {
    return undefined;
  }
}

export async function startAgent(options: AgentOptions): Promise<RunningAgent> {
  const { client, log } = options;
  const clock = options.clock ?? { now: () => Date.now() };
  const expected = digest(options.agentToken);
  const header = AGENT_TOKEN_HEADER.toLowerCase();

  async function serveToken(search: URLSearchParams): Promise<Answer> {
    const query = tokenQuery(search);
    if ('status' in query) return query;
    const { scope, minTtl, revoked } = query;
    const ask = {
      ...(scope !== undefined ? { scope } : {}),
      ...(minTtl !== undefined ? { minTtl } : {}),
    };
    let token = await client.getToken(ask);
    if (revoked !== undefined && fingerprint(token.accessToken) === revoked) {
      // The caller's provider refused this token: drop it, and the client reports it on its next request.
      client.invalidate(scope ?? null);
      token = await client.getToken(ask);
    }
    return {
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: vendBody(token, clock.now()),
      ...(scope !== undefined ? { scope } : {}),
      fingerprint: fingerprint(token.accessToken),
    };
  }

  async function answer(request: IncomingMessage, url: URL): Promise<Answer> {
    const method = request.method ?? 'GET';
    if (url.pathname === '/healthz') {
      // As the Secrets Manager Agent's /ping: no header, so a container health check can call it.
      if (method !== 'GET' && method !== 'HEAD') {
        return methodNotAllowed();
      }
      return {
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: { status: 'ok' },
      };
    }
    if (request.headers['x-forwarded-for'] !== undefined) {
      return problem(
        'invalid_request',
        'Forwarded requests are refused',
        'the request has X-Forwarded-For',
      );
    }
    const given = request.headers[header];
    if (typeof given !== 'string' || given === '') {
      return problem(
        'unauthenticated',
        'Missing agent token',
        `send the ${AGENT_TOKEN_HEADER} header`,
      );
    }
    if (!timingSafeEqual(digest(given), expected)) {
      return problem(
        'access_denied',
        'Wrong agent token',
        `the ${AGENT_TOKEN_HEADER} header does not match`,
      );
    }
    if (url.pathname !== '/token')
      return problem('not_found', 'Not found', 'GET /token or /healthz');
    if (method !== 'GET') return methodNotAllowed();
    try {
      return await serveToken(url.searchParams);
    } catch (error) {
      if (error instanceof TokenVendingError) return problemFor(error);
      return internalError(unexpected(error));
    }
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const started = clock.now();
    // Only the path and query are used: an absolute-form target's host is ignored.
    // One that is no URL at all (`GET http://[ HTTP/1.1`) is a 400, not a crash:
    // anyone on the host can send it, without the agent token.
    const url = requestUrl(request.url);
    let result: Answer;
    try {
      result = url
        ? await answer(request, url)
        : problem('invalid_request', 'Invalid request', 'the request target is not a URL');
    } catch (error) {
      result = internalError(unexpected(error));
    }
    const body = JSON.stringify(result.body);
    response.writeHead(result.status, {
      'cache-control': 'no-store',
      'content-length': Buffer.byteLength(body),
      ...result.headers,
    });
    response.end(request.method === 'HEAD' ? undefined : body);
    log({
      level: result.status >= 500 ? 'ERROR' : 'INFO',
      message: 'request',
      method: request.method,
      ...(url ? { path: url.pathname } : {}),
      ...(result.scope !== undefined ? { scope: result.scope } : {}),
      status: result.status,
      ...(result.code !== undefined ? { code: result.code } : {}),
      ...(result.fingerprint !== undefined ? { fingerprint: result.fingerprint } : {}),
      ...(result.error !== undefined ? { error: result.error } : {}),
      ms: clock.now() - started,
    });
  }

  const server = createServer((request, response) => {
    // Whatever one request does, the agent keeps serving the others.
    handle(request, response).catch(() => response.destroy());
  });
  await new Promise<void>((listening, fail) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      fail(
        error.code === 'EADDRINUSE'
          ? new CliError('address_in_use', `${AGENT_HOST}:${options.port} is in use: pass --port`)
          : error,
      );
    });
    server.listen({ host: AGENT_HOST, port: options.port, exclusive: true }, listening);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${AGENT_HOST}:${port}`,
    port,
    close: () =>
      new Promise<void>((closed) => {
        server.close(() => closed());
        server.closeIdleConnections();
        // A request still waiting on the vend URL is cut off after a moment.
        setTimeout(() => server.closeAllConnections(), 2000).unref();
      }),
  };
}
