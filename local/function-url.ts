/**
 * A local Lambda Function URL with `AuthType AWS_IAM`: an HTTP server that
 * checks each request's AWS Signature Version 4 (service `lambda`, see
 * sigv4-verifier.ts), answers 403 `{"Message":"Forbidden"}` to anything
 * unsigned or wrongly signed, and invokes the handler with a payload format 2.0
 * event carrying the caller's IAM identity (see function-url-event.ts).
 *
 * Callers are the configured local identities (local-identities.ts). Nothing
 * here logs or echoes the Authorization header, a secret or a session token.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type {
  APIGatewayProxyStructuredResultV2,
  LambdaFunctionURLEvent,
  LambdaFunctionURLResult,
} from 'aws-lambda';
import { buildFunctionUrlEvent, collectHeaders } from './function-url-event.js';
import type { LocalIdentity } from './local-identities.js';
import { explainRefusal, type SignatureRefusal } from './signature-refusal.js';
import { type SigV4Request, verifySigV4 } from './sigv4-verifier.js';

export type UrlHandler = (event: LambdaFunctionURLEvent) => Promise<LambdaFunctionURLResult>;

/** Where the URL says why it refused a signature: the stack's Powertools logger. */
export interface RefusalLog {
  warn(message: string, attributes: { refused: SignatureRefusal; requestId: string }): void;
}

export interface LocalFunctionUrl {
  readonly url: string;
  close(): Promise<void>;
}

export interface LocalFunctionUrlOptions {
  handler: UrlHandler;
  identities: readonly LocalIdentity[];
  /** Region of the signing scope. Default us-east-1. */
  region?: string;
  /** 0 or absent: a random free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Called with the (secret-free) reason whenever a request is answered 403. */
  onDenied?: (reason: string) => void;
  /**
   * Gets one line for each refused signature: which check failed and a hint
   * (signature-refusal.ts), never a secret, signature or session token.
   */
  log?: RefusalLog;
  /** Clock for the signature date check, epoch milliseconds. Default Date.now. */
  now?: () => number;
}

/** Lambda's synchronous invocation payload limit. */
export const MAX_BODY_BYTES = 6 * 1024 * 1024;

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  extra: Record<string, string> = {},
): void {
  const payload = Buffer.from(JSON.stringify(body));
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': String(payload.length),
    ...extra,
  });
  res.end(payload);
}

function writeResult(
  res: ServerResponse,
  result: LambdaFunctionURLResult,
  requestId: string,
): void {
  // Response inference, as Function URLs do: a string or an object without
  // statusCode is a 200 JSON body.
  let structured: APIGatewayProxyStructuredResultV2;
  if (typeof result === 'string') {
    structured = { statusCode: 200, body: result };
  } else if (
    result !== null &&
    typeof result === 'object' &&
    typeof (result as APIGatewayProxyStructuredResultV2).statusCode === 'number'
  ) {
    structured = result as APIGatewayProxyStructuredResultV2;
  } else {
    structured = { statusCode: 200, body: JSON.stringify(result ?? null) };
  }

  const headers: Record<string, string | string[]> = {};
  let hasContentType = false;
  for (const [name, value] of Object.entries(structured.headers ?? {})) {
    if (name.toLowerCase() === 'content-type') hasContentType = true;
    headers[name] = String(value);
  }
  if (!hasContentType) headers['Content-Type'] = 'application/json';
  if (structured.cookies && structured.cookies.length > 0) {
    headers['Set-Cookie'] = structured.cookies;
  }
  headers['x-amzn-RequestId'] = requestId;
  const raw = structured.body ?? '';
  const payload = structured.isBase64Encoded
    ? Buffer.from(raw, 'base64')
    : Buffer.from(raw, 'utf8');
  headers['Content-Length'] = String(payload.length);
  res.writeHead(structured.statusCode ?? 200, headers);
  res.end(payload);
}

class PayloadTooLargeError extends Error {
  override name = 'PayloadTooLargeError';
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > limit) {
        failed = true;
        chunks.length = 0;
        reject(new PayloadTooLargeError());
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (!failed) resolve(Buffer.concat(chunks));
    });
    req.on('error', (error) => {
      if (!failed) {
        failed = true;
        reject(error);
      }
    });
  });
}

export function startLocalFunctionUrl(options: LocalFunctionUrlOptions): Promise<LocalFunctionUrl> {
  const region = options.region ?? 'us-east-1';
  const host = options.host ?? '127.0.0.1';
  const identities = [...options.identities];
  const now = options.now ?? Date.now;
  // The URL id that forms the real URL's host name: 32 lower-case alphanumerics.
  const apiId = Array.from(
    randomBytes(32),
    (b) => 'abcdefghijklmnopqrstuvwxyz0123456789'[b % 36],
  ).join('');

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const requestId = randomUUID();
    const forbidden = (reason: string) => {
      options.onDenied?.(reason);
      sendJson(
        res,
        403,
        { Message: 'Forbidden' },
        {
          'x-amzn-ErrorType': 'AccessDeniedException',
          'x-amzn-RequestId': requestId,
        },
      );
    };

    let body: Buffer;
    try {
      body = await readBody(req, MAX_BODY_BYTES);
    } catch (error) {
      if (error instanceof PayloadTooLargeError) {
        sendJson(
          res,
          413,
          { Message: 'Request Entity Too Large' },
          {
            Connection: 'close',
            'x-amzn-RequestId': requestId,
          },
        );
      } else {
        res.destroy();
      }
      return;
    }

    // The request target as received: origin-form `/path?query` (absolute-form tolerated).
    let target = req.url ?? '/';
    const absolute = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(target);
    if (absolute) target = target.slice(absolute[0].length) || '/';
    const q = target.indexOf('?');
    const rawPath = q === -1 ? target : target.slice(0, q);
    const rawQueryString = q === -1 ? '' : target.slice(q + 1);

    const headers = collectHeaders(req.rawHeaders);
    const signed: SigV4Request = {
      method: req.method ?? 'GET',
      path: rawPath,
      rawQueryString,
      headers,
      body,
    };
    const checks = { identities, region, now: now() };
    const verdict = verifySigV4(signed, checks);
    if (!verdict.ok) {
      if (options.log) {
        const refused = explainRefusal(signed, checks, verdict.reason);
        options.log.warn(`local URL refused a signature: ${refused.reason}`, {
          refused,
          requestId,
        });
      }
      forbidden(verdict.reason);
      return;
    }

    let event: LambdaFunctionURLEvent;
    try {
      event = buildFunctionUrlEvent({
        method: req.method ?? 'GET',
        rawPath,
        rawQueryString,
        headers,
        body,
        caller: verdict.identity,
        apiId,
        sourceIp: (req.socket.remoteAddress ?? '').replace(/^::ffff:/, ''),
        localPort: req.socket.localPort ?? 0,
        httpVersion: req.httpVersion,
        requestId,
        now: Date.now(),
      });
    } catch {
      // Unreachable in practice: the query already parsed during verification.
      sendJson(res, 400, { Message: 'Bad Request' }, { 'x-amzn-RequestId': requestId });
      return;
    }

    let result: LambdaFunctionURLResult;
    try {
      result = await options.handler(event);
    } catch {
      sendJson(res, 502, { Message: 'Internal Server Error' }, { 'x-amzn-RequestId': requestId });
      return;
    }
    try {
      writeResult(res, result, requestId);
    } catch {
      if (!res.headersSent) {
        sendJson(res, 502, { Message: 'Internal Server Error' }, { 'x-amzn-RequestId': requestId });
      } else {
        res.destroy();
      }
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) sendJson(res, 500, { Message: 'Internal Server Error' });
      else res.destroy();
    });
  });

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      const { port } = server.address() as AddressInfo;
      const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
      resolve({
        url,
        close: () =>
          new Promise<void>((done, fail) => {
            server.close((error) => (error ? fail(error) : done()));
            server.closeAllConnections();
          }),
      });
    });
  });
}
