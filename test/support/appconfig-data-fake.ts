/**
 * A stand-in for the AWS AppConfig Data API on loopback (there is no local
 * emulator): StartConfigurationSession and GetLatestConfiguration as the
 * service answers them, so the real SDK client, Powertools' provider and our
 * middleware run unchanged. GetLatestConfiguration answers an empty body when
 * the session already has the deployed version, as AppConfig does.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type SigV4Credentials, verifySigV4 } from '../../local/sigv4-verifier.js';

export interface AppConfigDataFake {
  readonly url: string;
  /** Deploys a new version: its content and optional label. */
  deploy(content: string, label?: string): void;
  /** The next `count` GetLatestConfiguration calls answer 500. */
  fail(count: number): void;
  readonly stats: { sessions: number; polls: number; refusedSignatures: number };
  close(): Promise<void>;
}

/**
 * `identities`: when given, every request must carry a SigV4 signature of one
 * of them for service `appconfig` in `region` (as AppConfig Data checks).
 */
export async function startAppConfigDataFake(
  options: { identities?: readonly SigV4Credentials[]; region?: string } = {},
): Promise<AppConfigDataFake> {
  let version = 0;
  let content = '';
  let label: string | undefined;
  let failures = 0;
  const stats = { sessions: 0, polls: 0, refusedSignatures: 0 };
  const signedBy = async (req: IncomingMessage): Promise<boolean> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (!options.identities) return true;
    const url = req.url ?? '/';
    const at = url.indexOf('?');
    const verdict = verifySigV4(
      {
        method: req.method ?? 'GET',
        path: at < 0 ? url : url.slice(0, at),
        rawQueryString: at < 0 ? '' : url.slice(at + 1),
        headers: req.headers,
        body: Buffer.concat(chunks),
      },
      {
        identities: options.identities,
        region: options.region ?? 'us-east-1',
        now: Date.now(),
        service: 'appconfig',
      },
    );
    return verdict.ok;
  };
  /** Token -> the version its session has seen. */
  const tokens = new Map<string, number>();
  const server: Server = createServer(async (req, res) => {
    if (!(await signedBy(req))) {
      stats.refusedSignatures += 1;
      res.writeHead(403, {
        'content-type': 'application/json',
        'x-amzn-errortype': 'InvalidSignatureException',
      });
      res.end(JSON.stringify({ message: 'The request signature we calculated does not match' }));
      return;
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (req.method === 'POST' && url.pathname === '/configurationsessions') {
      stats.sessions += 1;
      const token = randomUUID();
      tokens.set(token, -1);
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ InitialConfigurationToken: token }));
      return;
    }
    if (req.method === 'GET' && url.pathname === '/configuration') {
      stats.polls += 1;
      const token = url.searchParams.get('configuration_token') ?? '';
      const seen = tokens.get(token);
      if (seen === undefined) {
        res.writeHead(400, {
          'content-type': 'application/json',
          'x-amzn-errortype': 'BadRequestException',
        });
        res.end(JSON.stringify({ Message: 'invalid token' }));
        return;
      }
      if (failures > 0) {
        failures -= 1;
        res.writeHead(500, {
          'content-type': 'application/json',
          'x-amzn-errortype': 'InternalServerException',
        });
        res.end(JSON.stringify({ Message: 'injected' }));
        return;
      }
      tokens.delete(token);
      const next = randomUUID();
      tokens.set(next, version);
      const changed = seen !== version;
      res.writeHead(200, {
        'content-type': 'application/json',
        'next-poll-configuration-token': next,
        'next-poll-interval-in-seconds': '15',
        ...(changed && label !== undefined ? { 'version-label': label } : {}),
      });
      res.end(changed ? content : '');
      return;
    }
    res.writeHead(404);
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    deploy(next, nextLabel) {
      version += 1;
      content = next;
      label = nextLabel;
    },
    fail(count) {
      failures = count;
    },
    stats,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
