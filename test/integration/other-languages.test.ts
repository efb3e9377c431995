/**
 * The vend examples in Python, Go, Java and curl (examples/, quoted in
 * docs/other-languages.md), each run against the local stack where this
 * machine has its runtime, and skipped, saying what is missing, where not.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEMO_IDENTITY, type LocalIdentity } from '../../local/local-identities.js';
import { type LocalStack, startLocalStack } from '../../local/stack.js';
import {
  DEBIAN_GOPATH,
  findCurl,
  findGo,
  findJava,
  findPython,
  type Runtime,
} from '../support/language-runtimes.js';
import { quietLogger } from '../support/vend-harness.js';

const ROOT = resolve(import.meta.dirname, '../..');
const EXAMPLES = join(ROOT, 'examples');

/** Temporary credentials, as a role session (ECS task, Lambda) has them. */
const SESSION: LocalIdentity & { sessionToken: string } = {
  accessKeyId: 'ASIALOCALSESSION0001',
  secretAccessKey: 'sessionSecretAccessKey000000000000000000',
  sessionToken: 'IQoJb3JpZ2luX2VjEXAMPLE/session+token==',
  arn: 'arn:aws:sts::111122223333:assumed-role/reporting/session-7',
};
/** A scope with a character that must be percent-encoded in the query (':'). */
const SCOPE = 'ba:demo.1';
const POLICY = {
  scopes: ['ba_demo_1', SCOPE],
  grants: [
    { principal: 'arn:aws:iam::000000000000:role/local-demo', scopes: ['*'], unscoped: true },
    { principal: 'arn:aws:iam::111122223333:role/reporting', scopes: [SCOPE] },
  ],
};

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv, cwd = ROOT): Promise<Run> {
  return new Promise((done) => {
    execFile(command, args, { env, cwd, timeout: 120_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      done({ code, stdout, stderr });
    });
  });
}

/** Only what the example needs: no AWS profile or instance role of this machine. */
const baseEnv = (): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  AWS_CONFIG_FILE: '/nonexistent',
  AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
  AWS_EC2_METADATA_DISABLED: 'true',
});

interface Example {
  readonly language: string;
  /** The example's file, relative to examples/. */
  readonly file: string;
  readonly runtime: Runtime;
  /** Builds what needs building in `work`; the command that runs the example. */
  prepare(command: string, work: string): Promise<{ command: string; args: string[] }>;
  /** The example's success output as `token_type=… scope=… expires_in=…`. */
  summary?(stdout: string): string;
}

const LANGUAGES: Example[] = [
  {
    language: 'Python (botocore SigV4Auth)',
    file: 'python/vend.py',
    runtime: findPython(),
    prepare: async (python) => ({ command: python, args: [join(EXAMPLES, 'python/vend.py')] }),
  },
  {
    language: 'Go (aws-sdk-go-v2 v4 signer)',
    file: 'go/main.go',
    runtime: findGo(),
    async prepare(go, work) {
      // Offline: Debian's SDK sources in GOPATH mode, in place of the module proxy.
      const built = await run(
        go,
        ['build', '-o', join(work, 'vend'), '.'],
        { ...baseEnv(), GO111MODULE: 'off', GOPATH: DEBIAN_GOPATH, GOFLAGS: '' },
        join(EXAMPLES, 'go'),
      );
      expect(built.stderr).toBe('');
      expect(built.code).toBe(0);
      return { command: join(work, 'vend'), args: [] };
    },
  },
  {
    language: 'Java (JDK only)',
    file: 'java/Vend.java',
    runtime: findJava(),
    async prepare(java, work) {
      const built = await run('javac', ['-d', work, join(EXAMPLES, 'java/Vend.java')], baseEnv());
      expect(built.stderr).toBe('');
      expect(built.code).toBe(0);
      return { command: java, args: ['-cp', work, 'Vend'] };
    },
  },
  {
    language: 'curl --aws-sigv4',
    file: 'curl/vend.sh',
    runtime: findCurl(),
    prepare: async () => ({ command: 'sh', args: [join(EXAMPLES, 'curl/vend.sh')] }),
    summary(stdout) {
      const token = JSON.parse(stdout) as Record<string, unknown>;
      return `token_type=${token.token_type} scope=${token.scope ?? ''} expires_in=${token.expires_in}`;
    },
  },
];

/**
 * In front of the local URL: counts the requests an example sends, answers the
 * next `failures` of them 503 with `Retry-After: 1`, and keeps the tokens the
 * URL answered, so a test can tell they were never printed.
 */
class CountingProxy {
  requests = 0;
  failures = 0;
  readonly tokens: string[] = [];
  private server?: Server;
  url = '';

  async start(target: string): Promise<void> {
    const upstream = new URL(target);
    this.server = createServer((incoming, outgoing) => {
      this.requests += 1;
      if (this.failures > 0) {
        this.failures -= 1;
        outgoing.writeHead(503, { 'Content-Type': 'application/problem+json', 'Retry-After': '1' });
        outgoing.end(
          '{"status":503,"code":"upstream_unavailable","title":"Provider unavailable","detail":"Injected."}',
        );
        return;
      }
      // Forwarded as sent, Host included: the host the example signed.
      const forwarded = request(
        {
          host: upstream.hostname,
          port: upstream.port,
          path: incoming.url,
          method: incoming.method,
          headers: incoming.headers,
        },
        (answer) => {
          const chunks: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => chunks.push(chunk));
          answer.on('end', () => {
            const body = Buffer.concat(chunks);
            const token = /"access_token":"([^"]+)"/.exec(body.toString('utf8'))?.[1];
            if (token) this.tokens.push(token);
            outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
            outgoing.end(body);
          });
        },
      );
      forwarded.on('error', () => outgoing.destroy());
      forwarded.end();
    });
    await new Promise<void>((listening) => this.server?.listen(0, '127.0.0.1', listening));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  reset(): void {
    this.requests = 0;
    this.failures = 0;
  }

  async stop(): Promise<void> {
    await new Promise((closed) => this.server?.close(closed));
  }
}

let stack: LocalStack;
const proxy = new CountingProxy();
beforeAll(async () => {
  if (!LANGUAGES.some((example) => example.runtime.ok)) return;
  stack = await startLocalStack(
    {
      PORT: '0',
      DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'),
      TABLE_NAME: `other-languages-${Date.now()}`,
      LOCAL_IDENTITIES: JSON.stringify([DEMO_IDENTITY, SESSION]),
      ACCESS_POLICY: JSON.stringify(POLICY),
    },
    { stackFile: null, logger: quietLogger() },
  );
  stack.simulator?.setOptions({ allowedScopes: POLICY.scopes });
  await proxy.start(stack.info.functionUrl);
});
afterAll(async () => {
  await proxy.stop();
  await stack?.stop();
});

/** The environment an example runs in, signing as `identity` (its secret overridden). */
function callerEnv(
  identity: LocalIdentity,
  secret = identity.secretAccessKey,
  url = stack.info.functionUrl,
): NodeJS.ProcessEnv {
  return {
    ...baseEnv(),
    TOKEN_VENDING_URL: url,
    AWS_REGION: stack.info.region,
    AWS_ACCESS_KEY_ID: identity.accessKeyId,
    AWS_SECRET_ACCESS_KEY: secret,
    ...(identity.sessionToken === undefined ? {} : { AWS_SESSION_TOKEN: identity.sessionToken }),
  };
}

for (const example of LANGUAGES) {
  const { runtime } = example;
  const title = runtime.ok
    ? `${example.language} example`
    : `${example.language} example (skipped: ${runtime.reason})`;

  describe.skipIf(!runtime.ok)(title, () => {
    let work: string;
    let command: { command: string; args: string[] };
    beforeAll(async () => {
      work = mkdtempSync(join(tmpdir(), 'vend-example-'));
      command = await example.prepare(runtime.ok ? runtime.command : '', work);
    }, 240_000);
    afterAll(() => rmSync(work, { recursive: true, force: true }));

    const vend = (env: NodeJS.ProcessEnv, scope?: string | string[]) =>
      run(command.command, [...command.args, ...(scope === undefined ? [] : [scope].flat())], env);
    const summaryOf = (result: Run) =>
      (example.summary ?? ((stdout: string) => stdout))(result.stdout).trim();

    it('vends a scoped token with temporary credentials, the scope percent-encoded', async () => {
      const result = await vend(callerEnv(SESSION), SCOPE);

      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(summaryOf(result)).toMatch(/^token_type=Bearer scope=ba:demo\.1 expires_in=\d+$/);
    });

    it('vends the unscoped token with a long-term key', async () => {
      const result = await vend(callerEnv(DEMO_IDENTITY));

      expect(result.code).toBe(0);
      expect(summaryOf(result)).toMatch(/^token_type=Bearer scope= expires_in=\d+$/);
    });

    it('fails with the 403 it got when the secret is wrong', async () => {
      const result = await vend(callerEnv(DEMO_IDENTITY, 'wrong'.padEnd(40, '0')), 'ba_demo_1');

      expect(result.code).not.toBe(0);
      expect(`${result.stdout}${result.stderr}`).toContain('{"Message":"Forbidden"}');
    });

    it('is refused a scope its caller is not granted, with the problem code', async () => {
      const result = await vend(callerEnv(SESSION), 'ba_demo_1');

      expect(result.code).not.toBe(0);
      expect(`${result.stdout}${result.stderr}`).toContain('"code":"access_denied"');
    });

    it("takes the URL as the stack's VendUrl output gives it, ending with '/'", async () => {
      const result = await vend(
        callerEnv(DEMO_IDENTITY, undefined, `${stack.info.functionUrl}/`),
        'ba_demo_1',
      );

      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(summaryOf(result)).toMatch(/^token_type=Bearer scope=ba_demo_1 expires_in=\d+$/);
    });

    it('retries a 503 after its Retry-After, as the docs tell every caller to', async () => {
      proxy.reset();
      proxy.failures = 1;
      const started = Date.now();
      const result = await vend(callerEnv(DEMO_IDENTITY, undefined, proxy.url), 'ba_demo_1');

      expect(result.code).toBe(0);
      expect(proxy.requests).toBe(2);
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    });

    it('gives up after two retries of a 503, with the problem code', async () => {
      proxy.reset();
      proxy.failures = 3;
      const result = await vend(callerEnv(DEMO_IDENTITY, undefined, proxy.url), 'ba_demo_1');

      expect(result.code).not.toBe(0);
      expect(proxy.requests).toBe(3);
      expect(`${result.stdout}${result.stderr}`).toContain('"code":"upstream_unavailable"');
    });

    it.skipIf(example.summary !== undefined)(
      'keeps a token until it has min_ttl left, and never prints it',
      async () => {
        proxy.reset();
        const result = await vend(callerEnv(DEMO_IDENTITY, undefined, proxy.url), [
          'ba_demo_1',
          'ba_demo_1',
        ]);

        expect(result.code).toBe(0);
        expect(result.stdout.trim().split('\n')).toHaveLength(2);
        expect(proxy.requests).toBe(1);
        const output = `${result.stdout}${result.stderr}`;
        for (const token of proxy.tokens) expect(output).not.toContain(token);
        expect(output).not.toMatch(/AWS4-HMAC-SHA256|Signature=/);
      },
    );
  });
}

describe('docs/other-languages.md', () => {
  const doc = readFileSync(join(ROOT, 'docs/other-languages.md'), 'utf8');
  /** Each `<!-- quoted from examples/… -->` and the fenced block after it. */
  const quotes = [
    ...doc.matchAll(/<!-- quoted from examples\/(\S+) -->\n```\w*\n([\s\S]*?)\n```/g),
  ];

  it.each(LANGUAGES.map((example) => [example.file]))('quotes examples/%s', (file) => {
    expect(quotes.map((quote) => quote[1])).toContain(file);
  });

  it('says how a caller in AWS gets credentials, and the permissions its role needs', () => {
    const section = doc.slice(doc.indexOf('## In AWS'), doc.indexOf('## Against the local stack'));
    expect(section).toContain('lambda:InvokeFunctionUrl');
    expect(section).toContain('lambda:InvokeFunction`');
    expect(section).toContain('function:token-vending-<stage>-vend-token:live');
    expect(section).toContain('../README.md#iam-permissions-a-caller-needs');
    for (const example of ['Python', 'Go', 'Java', 'curl'])
      expect(section).toContain(`| ${example}`);
  });

  it('quotes each example verbatim, so that the doc shows the code the test runs', () => {
    for (const [, file = '', text = ''] of quotes) {
      expect(readFileSync(join(EXAMPLES, file), 'utf8')).toContain(text);
    }
  });
});
