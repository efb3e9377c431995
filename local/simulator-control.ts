/**
 * The provider simulator's control endpoint, so that faults can be injected and
 * counts read from outside the process (the local stack's simulator, a
 * simulator run on its own), not only by tests holding the simulator object:
 *
 * - `POST /__simulator/faults` with `{"endpoint":"token"|"keys","fault":{...},"times":n}`
 *   queues a fault (simulator-faults.ts) for the next `times` requests (default 1);
 * - `GET /__simulator/faults` lists the faults still pending, per endpoint, in the
 *   order they apply, each with the requests it has left;
 * - `DELETE /__simulator/faults` clears them (`?endpoint=token|keys`: that endpoint's only),
 *   so that a fault left from earlier cannot break a later try;
 * - `GET /__simulator/stats` answers the request counts (never a credential or token).
 *
 * The path cannot be mistaken for the provider's own API, which lives under /oauth
 * and /partner.
 */
import * as v from 'valibot';
import type { KeysFault, PendingFault, TokenFault } from './simulator-faults.js';
import { error, type Reply } from './simulator-http.js';
import type { SimulatorStats } from './simulator-stats.js';

export const CONTROL_PREFIX = '/__simulator/';

const Status = v.object({
  kind: v.literal('status'),
  status: v.pipe(v.number(), v.integer(), v.minValue(400), v.maxValue(599)),
  retryAfter: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(86_400))),
  body: v.optional(v.union([v.string(), v.record(v.string(), v.unknown())])),
});
const Latency = v.object({
  kind: v.literal('latency'),
  ms: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(60_000)),
});
const bare = <K extends string>(kind: K) => v.object({ kind: v.literal(kind) });

const TokenFaultSchema = v.variant('kind', [
  Latency,
  Status,
  bare('malformed'),
  bare('wrongScope'),
  bare('wrongTokenType'),
  bare('missingExpiresIn'),
  v.object({ kind: v.literal('expiresIn'), value: v.number() }),
  bare('hang'),
  bare('reset'),
]);
const KeysFaultSchema = v.variant('kind', [
  Latency,
  Status,
  bare('malformed'),
  bare('hang'),
  bare('reset'),
  bare('dropAfterCommit'),
]);
const Times = v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10_000)), 1);
const FaultRequest = v.variant('endpoint', [
  v.object({ endpoint: v.literal('token'), fault: TokenFaultSchema, times: Times }),
  v.object({ endpoint: v.literal('keys'), fault: KeysFaultSchema, times: Times }),
]);

export type FaultEndpoint = 'token' | 'keys';

/** The pending faults of each endpoint, in the order they apply. */
export interface PendingFaults {
  token: PendingFault<TokenFault>[];
  keys: PendingFault<KeysFault>[];
}

export interface ControlTarget {
  injectTokenFault(fault: TokenFault, times: number): void;
  injectKeysFault(fault: KeysFault, times: number): void;
  pendingFaults(): PendingFaults;
  /** Clears the pending faults of `endpoint`, or of both. */
  clearFaults(endpoint?: FaultEndpoint): void;
  readonly stats: SimulatorStats;
}

const FAULT_METHODS = 'GET, POST, DELETE';

/**
 * The endpoints a GET or DELETE names: both, or the one in `?endpoint=token|keys`;
 * a string saying what is wrong with any other query.
 */
function endpointsOf(rawQuery: string): FaultEndpoint[] | string {
  const params = [...new URLSearchParams(rawQuery)];
  if (params.length === 0) return ['token', 'keys'];
  const [name, value] = params[0] ?? [];
  if (params.length > 1 || name !== 'endpoint' || (value !== 'token' && value !== 'keys')) {
    return 'the only query parameter is endpoint=token or endpoint=keys';
  }
  return [value];
}

function faultsReply(target: ControlTarget, method: string, rawQuery: string): Reply {
  const endpoints = endpointsOf(rawQuery);
  if (typeof endpoints === 'string') return error(400, 'invalid_request', endpoints);
  const before = target.pendingFaults();
  const listed = Object.fromEntries(endpoints.map((endpoint) => [endpoint, before[endpoint]]));
  if (method === 'GET') return { status: 200, body: listed };
  for (const endpoint of endpoints) target.clearFaults(endpoint);
  return { status: 200, body: { cleared: listed } };
}

/**
 * Answers one control request; `rawQuery` is the query string without `?`, `body`
 * the request body already read.
 */
export function controlReply(
  target: ControlTarget,
  method: string,
  path: string,
  rawQuery: string,
  body: string,
): Reply {
  const action = path.slice(CONTROL_PREFIX.length);
  if (action === 'stats') {
    return method === 'GET'
      ? { status: 200, body: target.stats }
      : error(405, 'method_not_allowed', 'use GET', { allow: 'GET' });
  }
  if (action !== 'faults') return error(404, 'not_found', 'control actions: faults, stats');
  if (method === 'GET' || method === 'DELETE') return faultsReply(target, method, rawQuery);
  if (method !== 'POST') {
    return error(405, 'method_not_allowed', `use ${FAULT_METHODS}`, { allow: FAULT_METHODS });
  }
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return error(400, 'invalid_request', 'the body must be JSON');
  }
  const parsed = v.safeParse(FaultRequest, json);
  if (!parsed.success) {
    return error(
      400,
      'invalid_request',
      'expected {"endpoint":"token"|"keys","fault":{"kind":...},"times"?:1..10000}; ' +
        'token faults: latency {ms}, status {status, retryAfter?, body?}, malformed, wrongScope, ' +
        'wrongTokenType, missingExpiresIn, expiresIn {value}, hang, reset; keys faults: latency, ' +
        'status, malformed, hang, reset, dropAfterCommit',
    );
  }
  const request = parsed.output;
  if (request.endpoint === 'token') target.injectTokenFault(request.fault, request.times);
  else target.injectKeysFault(request.fault, request.times);
  return { status: 202, body: { queued: request.fault.kind, times: request.times } };
}
