/**
 * The local stack's control endpoint, on loopback: `npm run admin` tells the
 * running stack's instances to forget what they hold in memory after an
 * `invalidate` or a `refresh`, so on one machine the next vend shows what the
 * operator did at once. (In AWS each instance keeps a token in memory for up
 * to 60 s: nothing reaches Lambda's instances.) Requests carry a per-start
 * token from the stack file (mode 0600); nothing else is accepted.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as v from 'valibot';
import type { InstancePool } from './instance-pool.js';
import { readBody } from './simulator-http.js';

export const CONTROL_TOKEN_HEADER = 'x-local-control-token';
const MAX_BODY_BYTES = 64 * 1024;

/** `{"all":true}` or `{"scopes":["ba_1","unscoped"]}`. */
const ForgetRequest = v.union([
  v.strictObject({ all: v.literal(true) }),
  v.strictObject({ scopes: v.pipe(v.array(v.string()), v.maxLength(1000)) }),
]);
export type ForgetRequest = v.InferOutput<typeof ForgetRequest>;

export interface StackControl {
  readonly url: string;
  readonly token: string;
  close(): Promise<void>;
}

function sameToken(given: string | string[] | undefined, token: string): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

export async function startStackControl(
  pool: Pick<InstancePool, 'forget'>,
  options: {
    /** The access policy text the stack keeps in force (`GET /policy`). */
    readonly policyInForce?: () => Promise<string | undefined>;
  } = {},
): Promise<StackControl> {
  const token = randomBytes(24).toString('base64url');
  const server = createServer(async (req, res) => {
    const answer = (status: number) => res.writeHead(status).end();
    const route = `${req.method} ${req.url}`;
    if (route !== 'POST /forget' && route !== 'GET /policy') return answer(404);
    if (!sameToken(req.headers[CONTROL_TOKEN_HEADER], token)) return answer(403);
    if (route === 'GET /policy') {
      const text = await options.policyInForce?.().catch(() => undefined);
      if (text === undefined) return answer(404);
      return res.writeHead(200, { 'content-type': 'application/json' }).end(text);
    }
    // The simulator's reader never rejects: a client gone mid-body, or a body
    // over the limit, is answered 400 and never reaches the process.
    const read = await readBody(req, MAX_BODY_BYTES);
    let parsed: unknown;
    try {
      parsed = read.kind === 'ok' ? JSON.parse(read.body) : undefined;
    } catch {
      parsed = undefined;
    }
    const request = v.safeParse(ForgetRequest, parsed);
    if (!request.success) return answer(400);
    pool.forget(request.output);
    return answer(204);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    token,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The access policy text the running stack keeps in force, or undefined when
 * it cannot tell (best effort, as askStackToForget).
 */
export async function askStackForPolicy(
  control: { readonly url: string; readonly token: string },
  fetchImpl: typeof fetch = fetch,
): Promise<string | undefined> {
  try {
    const response = await fetchImpl(`${control.url}/policy`, {
      headers: { [CONTROL_TOKEN_HEADER]: control.token },
      signal: AbortSignal.timeout(2000),
    });
    if (response.status !== 200) {
      await response.body?.cancel();
      return undefined;
    }
    return await response.text();
  } catch {
    return undefined;
  }
}

/**
 * Asks the running stack to forget `request` (best effort: false when it did
 * not answer 204, e.g. a stack from before this endpoint existed).
 */
export async function askStackToForget(
  control: { readonly url: string; readonly token: string },
  request: ForgetRequest,
  fetchImpl: typeof fetch = fetch,
): Promise<boolean> {
  try {
    const response = await fetchImpl(`${control.url}/forget`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [CONTROL_TOKEN_HEADER]: control.token },
      body: JSON.stringify(request),
      signal: AbortSignal.timeout(2000),
    });
    await response.body?.cancel();
    return response.status === 204;
  } catch {
    return false;
  }
}
