/**
 * Provider simulator HTTP plumbing: the reply shape, OAuth-style error replies, sending a
 * reply, reading a bounded request body and the form content-type check.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { StringDecoder } from 'node:string_decoder';

export const MAX_BODY_BYTES = 64 * 1024;

export interface Reply {
  status: number;
  /** Objects are sent as JSON; strings as given (with the content type in headers). */
  body: unknown;
  headers?: OutgoingHttpHeaders;
}

export type BodyRead = { kind: 'ok'; body: string } | { kind: 'tooLarge' } | { kind: 'aborted' };

export function error(
  status: number,
  code: string,
  description?: string,
  headers?: OutgoingHttpHeaders,
) {
  const body: Record<string, string> = { error: code };
  if (description !== undefined) body.error_description = description;
  return { status, body, headers } satisfies Reply;
}

export function send(res: ServerResponse, reply: Reply): void {
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

export function readBody(req: IncomingMessage, limit: number): Promise<BodyRead> {
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

export function isForm(contentType: string | undefined): boolean {
  const media = contentType?.split(';', 1)[0]?.trim().toLowerCase();
  return media === 'application/x-www-form-urlencoded';
}
