import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RedirectingServer {
  /** Base URL of the server that answers every request with the redirect. */
  readonly url: string;
  /** Requests that reached the server it redirects to: none, if the redirect was not followed. */
  readonly followed: IncomingHttpHeaders[];
  /** Requests the redirecting server answered. */
  readonly answered: () => number;
  close(): Promise<void>;
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/**
 * An HTTP server on loopback that answers every request with `status` (a 3xx)
 * and a Location on a second server, which records the requests that followed
 * it (their headers: an Authorization there would be a leaked credential).
 */
export async function startRedirectingServer(status: number): Promise<RedirectingServer> {
  const followed: IncomingHttpHeaders[] = [];
  const elsewhere = createServer((request, response) => {
    followed.push(request.headers);
    request.resume();
    response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  const elsewhereUrl = await listen(elsewhere);
  let answered = 0;
  const redirecting = createServer((request, response) => {
    answered++;
    request.resume();
    response.writeHead(status, { location: `${elsewhereUrl}${request.url ?? '/'}` }).end();
  });
  const url = await listen(redirecting);
  const close = (server: Server) =>
    new Promise<void>((done) => {
      server.closeAllConnections();
      server.close(() => done());
    });
  return {
    url,
    followed,
    answered: () => answered,
    close: async () => {
      await Promise.all([close(redirecting), close(elsewhere)]);
    },
  };
}
