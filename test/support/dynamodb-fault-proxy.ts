/**
 * An HTTP proxy in front of DynamoDB Local that injects faults per operation
 * (`X-Amz-Target`), as real outages look from the client: connections refused
 * or reset, no answer at all, 500s, throttling, a slow table, and partial
 * outages (reads answered, writes failing). Counts what it received.
 */
import { createServer, request, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export type DynamoFault =
  | { readonly kind: 'pass' }
  /** The connection is closed without an answer. */
  | { readonly kind: 'reset' }
  /** No answer, ever (until the proxy closes). */
  | { readonly kind: 'hang' }
  | { readonly kind: 'status500' }
  | {
      readonly kind: 'throttle';
      readonly name?: 'ProvisionedThroughputExceededException' | 'ThrottlingException';
    }
  /** Answered correctly, after `ms` of real time. */
  | { readonly kind: 'slow'; readonly ms: number };

/** Chooses the fault for one request by its operation (`GetItem`, `UpdateItem`, ...). */
export type FaultRule = (operation: string) => DynamoFault;

export interface DynamoFaultProxy {
  readonly endpoint: string;
  /** Sets the rule for later requests; `undefined` passes everything. */
  set(rule: FaultRule | undefined): void;
  /** Requests received per operation since the last reset. */
  readonly received: Map<string, number>;
  reset(): void;
  close(): Promise<void>;
}

const PASS: DynamoFault = { kind: 'pass' };

export async function startDynamoFaultProxy(target: string): Promise<DynamoFaultProxy> {
  const upstream = new URL(target);
  let rule: FaultRule | undefined;
  const received = new Map<string, number>();
  const sockets = new Set<Socket>();
  const hung = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const operation = String(req.headers['x-amz-target'] ?? '').split('.')[1] ?? 'unknown';
      received.set(operation, (received.get(operation) ?? 0) + 1);
      const fault = rule?.(operation) ?? PASS;
      const forward = () => {
        const out = request(
          {
            host: upstream.hostname,
            port: upstream.port,
            method: req.method,
            path: req.url,
            headers: req.headers,
          },
          (answer) => {
            res.writeHead(answer.statusCode ?? 500, answer.headers);
            answer.pipe(res);
          },
        );
        out.on('error', () => res.destroy());
        out.end(Buffer.concat(chunks));
      };
      switch (fault.kind) {
        case 'pass':
          return forward();
        case 'slow':
          setTimeout(forward, fault.ms);
          return;
        case 'reset':
          req.socket.destroy();
          return;
        case 'hang':
          hung.add(res);
          return;
        case 'status500':
          res.writeHead(500, { 'content-type': 'application/x-amz-json-1.0' });
          res.end(
            JSON.stringify({
              __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError',
              message: 'Internal server error',
            }),
          );
          return;
        case 'throttle':
          res.writeHead(400, { 'content-type': 'application/x-amz-json-1.0' });
          res.end(
            JSON.stringify({
              __type: `com.amazonaws.dynamodb.v20120810#${fault.name ?? 'ProvisionedThroughputExceededException'}`,
              message: 'Rate exceeded',
            }),
          );
          return;
      }
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    endpoint: `http://127.0.0.1:${port}`,
    set(next) {
      rule = next;
    },
    received,
    reset() {
      received.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        hung.clear();
        server.close(() => resolve());
      }),
  };
}
