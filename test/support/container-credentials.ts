import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ServedCredentials {
  readonly AccessKeyId: string;
  readonly SecretAccessKey: string;
  readonly Token: string;
  /** ISO 8601, as the container credentials endpoint writes it. */
  readonly Expiration: string;
}

/**
 * A container credentials endpoint (the one `AWS_CONTAINER_CREDENTIALS_FULL_URI`
 * names) on 127.0.0.1 that answers `GET /credentials` with what `next()` returns
 * (a 500 when it returns undefined), and, for any other request, as DynamoDB
 * answers `ListTables` with no tables.
 * It records every request's headers, so a test can see which credentials
 * signed a call.
 */
export async function startCredentialsEndpoint(next: () => ServedCredentials | undefined): Promise<{
  readonly url: string;
  readonly credentialRequests: IncomingHttpHeaders[];
  readonly serviceRequests: IncomingHttpHeaders[];
  close(): Promise<void>;
}> {
  const credentialRequests: IncomingHttpHeaders[] = [];
  const serviceRequests: IncomingHttpHeaders[] = [];
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      if (request.method === 'GET' && request.url === '/credentials') {
        credentialRequests.push(request.headers);
        const served = next();
        response.writeHead(served ? 200 : 500, { 'content-type': 'application/json' });
        response.end(JSON.stringify(served ?? { message: 'unavailable' }));
        return;
      }
      serviceRequests.push(request.headers);
      response.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
      response.end('{"TableNames":[]}');
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    credentialRequests,
    serviceRequests,
    close: () =>
      new Promise<void>((done, fail) => {
        server.closeAllConnections();
        server.close((error) => (error ? fail(error) : done()));
      }),
  };
}
