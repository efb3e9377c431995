/**
 * A stand-in for the AWS AppConfig Data API on loopback (there is no local
 * emulator): StartConfigurationSession and GetLatestConfiguration as the
 * service answers them, so the real SDK client, Powertools' provider and our
 * middleware run unchanged. GetLatestConfiguration answers an empty body when
 * the session already has the deployed version, as AppConfig does.
 *
 * Poll intervals as AppConfig keeps them: a session allows a poll every
 * `RequiredMinimumPollIntervalInSeconds` (15..86400, else BadRequestException),
 * 60 s when the session did not ask; each answer says so in
 * `Next-Poll-Interval-In-Seconds`, and a poll sooner than that after the
 * previous answer is refused with BadRequestException (`PollIntervalNotSatisfied`),
 * leaving the token usable. The first poll of a session may come at once.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type SigV4Credentials, verifySigV4 } from '../../local/sigv4-verifier.js';

/** What a session gets when it asks for no interval (the AppConfig User Guide's example answer). */
export const APPCONFIG_DEFAULT_POLL_SECONDS = 60;

export interface AppConfigDataFake {
  readonly url: string;
  /** Deploys a new version: its content and optional label. */
  deploy(content: string, label?: string): void;
  /** The next `count` GetLatestConfiguration calls answer 500. */
  fail(count: number): void;
  /** From now on every answer asks for this interval instead of the session's (undefined: the session's). */
  answerInterval(seconds: number | undefined): void;
  readonly stats: {
    sessions: number;
    polls: number;
    refusedSignatures: number;
    /** Polls refused as earlier than the interval. */
    tooEarly: number;
    /** The RequiredMinimumPollIntervalInSeconds each session asked for (undefined: none). */
    requestedIntervals: Array<number | undefined>;
  };
  close(): Promise<void>;
}

interface Session {
  /** The version this session has seen. */
  seen: number;
  intervalSeconds: number;
  /** Epoch ms before which this token's poll is refused. */
  notBefore: number;
}

function answerError(res: ServerResponse, status: number, type: string, body: object): void {
  res.writeHead(status, { 'content-type': 'application/json', 'x-amzn-errortype': type });
  res.end(JSON.stringify(body));
}

/**
 * `identities`: when given, every request must carry a SigV4 signature of one
 * of them for service `appconfig` in `region` (as AppConfig Data checks).
 * `now`: the service's clock (epoch ms), read once per request; default Date.now.
 */
export async function startAppConfigDataFake(
  options: { identities?: readonly SigV4Credentials[]; region?: string; now?: () => number } = {},
): Promise<AppConfigDataFake> {
  const now = options.now ?? Date.now;
  let version = 0;
  let content = '';
  let label: string | undefined;
  let failures = 0;
  let override: number | undefined;
  const stats: AppConfigDataFake['stats'] = {
    sessions: 0,
    polls: 0,
    refusedSignatures: 0,
    tooEarly: 0,
    requestedIntervals: [],
  };
  const signedBy = (req: IncomingMessage, body: Buffer): boolean => {
    if (!options.identities) return true;
    const url = req.url ?? '/';
    const at = url.indexOf('?');
    const verdict = verifySigV4(
      {
        method: req.method ?? 'GET',
        path: at < 0 ? url : url.slice(0, at),
        rawQueryString: at < 0 ? '' : url.slice(at + 1),
        headers: req.headers,
        body,
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
  const tokens = new Map<string, Session>();
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const at = now();
    if (!signedBy(req, body)) {
      stats.refusedSignatures += 1;
      answerError(res, 403, 'InvalidSignatureException', {
        message: 'The request signature we calculated does not match',
      });
      return;
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (req.method === 'POST' && url.pathname === '/configurationsessions') {
      stats.sessions += 1;
      const asked = (JSON.parse(body.toString('utf8') || '{}') as Record<string, unknown>)
        .RequiredMinimumPollIntervalInSeconds as number | undefined;
      stats.requestedIntervals.push(asked);
      if (asked !== undefined && !(Number.isInteger(asked) && asked >= 15 && asked <= 86_400)) {
        answerError(res, 400, 'BadRequestException', {
          Message: 'RequiredMinimumPollIntervalInSeconds must be from 15 to 86400',
        });
        return;
      }
      const token = randomUUID();
      tokens.set(token, {
        seen: -1,
        intervalSeconds: asked ?? APPCONFIG_DEFAULT_POLL_SECONDS,
        notBefore: 0,
      });
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ InitialConfigurationToken: token }));
      return;
    }
    if (req.method === 'GET' && url.pathname === '/configuration') {
      stats.polls += 1;
      const token = url.searchParams.get('configuration_token') ?? '';
      const session = tokens.get(token);
      if (session === undefined) {
        answerError(res, 400, 'BadRequestException', { Message: 'invalid token' });
        return;
      }
      if (at < session.notBefore) {
        stats.tooEarly += 1;
        answerError(res, 400, 'BadRequestException', {
          Message: 'Request too early',
          Reason: 'InvalidParameters',
          Details: {
            InvalidParameters: { ConfigurationToken: { Problem: 'PollIntervalNotSatisfied' } },
          },
        });
        return;
      }
      if (failures > 0) {
        failures -= 1;
        answerError(res, 500, 'InternalServerException', { Message: 'injected' });
        return;
      }
      tokens.delete(token);
      const next = randomUUID();
      const interval = override ?? session.intervalSeconds;
      tokens.set(next, { ...session, seen: version, notBefore: at + interval * 1000 });
      const changed = session.seen !== version;
      res.writeHead(200, {
        'content-type': 'application/json',
        'next-poll-configuration-token': next,
        'next-poll-interval-in-seconds': String(interval),
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
    answerInterval(seconds) {
      override = seconds;
    },
    stats,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
