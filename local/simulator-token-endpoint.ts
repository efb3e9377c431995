/**
 * Provider simulator token endpoint (as the provider documents it): the Basic
 * client authentication check, the client_credentials grant, the scope rules, and the
 * issued access tokens that the key-issuing endpoint introspects.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Config, ProviderCredentials } from './simulator-config.js';
import type { TokenFault } from './simulator-faults.js';
import { error, isForm, type Reply } from './simulator-http.js';
import type { SimulatorStats } from './simulator-stats.js';

export const TOKEN_PATH = '/oauth/token';
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const MAX_TOKENS = 10_000;

/** An access token the simulator issued, by token value. */
export interface IssuedToken {
  scope: string;
  expiresAtMs: number;
}

/** What the token endpoint reads and updates; read at each request. */
export interface TokenEndpointState {
  readonly now: () => number;
  readonly credentials: ProviderCredentials;
  readonly config: Config;
  readonly stats: SimulatorStats;
  readonly tokens: Map<string, IssuedToken>;
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

function pruneTokens(tokens: Map<string, IssuedToken>, now: () => number): void {
  if (tokens.size < MAX_TOKENS) return;
  const t = now();
  for (const [token, info] of tokens) if (info.expiresAtMs <= t) tokens.delete(token);
  while (tokens.size >= MAX_TOKENS) {
    const oldest = tokens.keys().next().value;
    if (oldest === undefined) break;
    tokens.delete(oldest);
  }
}

function wrongScopeFor(config: Config, requested: string): string {
  return config.allowedScopes.find((s) => s !== requested) ?? `${requested || 'ba'}_wrong`;
}

/** 4.1: validates a token request (after faults) and issues the token. */
export function issueToken(
  state: TokenEndpointState,
  req: IncomingMessage,
  body: string,
  fault: TokenFault | undefined,
): Reply {
  const { now, credentials, config, stats, tokens } = state;
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
    return error(415, 'invalid_request', 'Content-Type must be application/x-www-form-urlencoded');
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
      return error(400, 'invalid_scope', 'scope must not be empty; omit it for an unscoped token');
    }
  } else if (!config.allowedScopes.includes(scope)) {
    return error(400, 'invalid_scope', 'the requested scope is not allowed for this client');
  }

  const grantedScope = scope ?? '';
  const issuedAtMs = now();
  const expiresIn = fault?.kind === 'expiresIn' ? fault.value : config.expiresIn;
  const accessToken = `sim_${randomBytes(32).toString('base64url')}`;
  pruneTokens(tokens, now);
  tokens.set(accessToken, { scope: grantedScope, expiresAtMs: issuedAtMs + expiresIn * 1000 });
  stats.tokensIssued += 1;

  const response: Record<string, unknown> = {
    access_token: accessToken,
    token_type: fault?.kind === 'wrongTokenType' ? 'mac' : 'Bearer',
    expires_in: expiresIn,
    scope: fault?.kind === 'wrongScope' ? wrongScopeFor(config, grantedScope) : grantedScope,
    created_at: config.createdAtUnit === 'ms' ? issuedAtMs : Math.floor(issuedAtMs / 1000),
  };
  if (fault?.kind === 'missingExpiresIn') delete response.expires_in;
  return { status: 200, body: response, headers: { pragma: 'no-cache' } };
}
