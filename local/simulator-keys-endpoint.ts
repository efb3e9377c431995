/**
 * Provider simulator key-issuing endpoint (as the provider documents it): bearer
 * token introspection, the partner feature flag, the request payload check, and key issuing
 * with Idempotency-Key records that replay the first answer.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Config } from './simulator-config.js';
import { error, type Reply } from './simulator-http.js';
import type { SimulatorStats } from './simulator-stats.js';
import type { IssuedToken } from './simulator-token-endpoint.js';

export const KEYS_PATH = /^\/partner\/v1\/basic_auth\/business_applications\/([^/]+)\/keys$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The answer kept for an Idempotency-Key (lower-cased), with the path id it was sent for. */
export interface IdempotencyRecord {
  id: string;
  status: number;
  body: string;
}

/** What the key-issuing endpoint reads and updates; read at each request. */
export interface KeysEndpointState {
  readonly now: () => number;
  readonly config: Config;
  readonly stats: SimulatorStats;
  readonly tokens: ReadonlyMap<string, IssuedToken>;
  readonly idempotency: Map<string, IdempotencyRecord>;
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

/** 4.2: validates a key-issuing request (after faults) and issues keys. */
export function issueKeys(
  state: KeysEndpointState,
  req: IncomingMessage,
  id: string,
  idempotencyKey: string | undefined,
  body: string,
): Reply {
  const { now, config, stats, tokens, idempotency } = state;
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
  if (!info) return error(401, 'invalid_token', 'unknown access token', challenge('invalid_token'));
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
