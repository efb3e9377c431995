/**
 * The `tvm agent` command in-process: its agent token (made per start and
 * written to a file, or from a variable), its options and its stop; the vend
 * URL is a scripted fetch.
 */
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_TOKEN_HEADER } from '../../client/agent.js';
import { AGENT_HELP, type CliIo, main } from '../../client/cli.js';
import { AGENT_TOKEN, CREDENTIALS, clock, URL_EU, vendUrl } from '../support/scripted-vend.js';

describe('tvm agent', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'tvm-agent-'));
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  /** Runs `tvm agent <args>` until `work` is done with its URL; the run's result. */
  async function run(
    args: string[],
    work: (url: string, stderr: () => string) => Promise<void> = async () => {},
    env: Record<string, string> = {},
  ) {
    const stop = new AbortController();
    let stderr = '';
    let stdout = '';
    const io: CliIo = {
      env,
      cwd: root,
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
      fetch: vendUrl().fetch,
      clock,
      signal: stop.signal,
    };
    const running = main(['agent', '--url', URL_EU, '--port', '0', ...args], {
      ...io,
      env: {
        AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
        ...env,
      },
    });
    const started = Date.now();
    let url: string | undefined;
    while (!url && Date.now() - started < 5000) {
      url = /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(stderr)?.[1];
      if (!url) {
        if (/tvm: /.test(stderr)) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    if (url) await work(url, () => stderr);
    stop.abort();
    return { code: await running, stderr, stdout };
  }

  it('writes a new agent token to the token file (mode 0600), accepts it, and removes the file on stop', async () => {
    const file = join(root, 'run', 'agent-token');
    let seen: { mode: number; token: string; status: number } | undefined;

    const result = await run(['--token-file', file], async (url) => {
      const token = (await readFile(file, 'utf8')).trim();
      const response = await fetch(`${url}/token?scope=ba_1`, {
        headers: { [AGENT_TOKEN_HEADER]: token },
      });
      seen = { mode: (await stat(file)).mode & 0o777, token, status: response.status };
    });

    expect(result.code).toBe(0);
    expect(seen?.mode).toBe(0o600);
    expect(seen?.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(seen?.status).toBe(200);
    expect(result.stderr.includes(seen?.token ?? '')).toBe(false);
    expect(result.stderr).toContain(`"tokenFile":"${file}"`);
    await expect(stat(file)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('makes a new agent token at each start', async () => {
    const file = join(root, 'each-start');
    const tokens: string[] = [];
    const read = async () => {
      tokens.push(await readFile(file, 'utf8'));
    };

    await run(['--token-file', file], read);
    await run(['--token-file', file], read);

    expect(tokens).toHaveLength(2);
    expect(tokens[0]).not.toBe(tokens[1]);
  });

  it('writes the token file with --token-file-mode, in a directory its readers can reach', async () => {
    // Regression: a directory it made was 0700 whatever the mode, so another
    // user could not reach a 0644 file.
    const file = join(root, 'shared', 'agent-token');
    let mode = 0;
    let directoryMode = 0;

    await run(['--token-file', file, '--token-file-mode', '644'], async () => {
      mode = (await stat(file)).mode & 0o777;
      directoryMode = (await stat(join(root, 'shared'))).mode & 0o777;
    });

    expect(mode).toBe(0o644);
    expect(directoryMode).toBe(0o711);
  });

  it('makes the directories for a 0644 token file reachable whatever the umask', async () => {
    const file = join(root, 'umask', 'nested', 'agent-token');
    const modes: number[] = [];
    const before = process.umask(0o077);
    try {
      await run(['--token-file', file, '--token-file-mode', '644'], async () => {
        for (const dir of [join(root, 'umask'), join(root, 'umask', 'nested')]) {
          modes.push((await stat(dir)).mode & 0o777);
        }
      });
    } finally {
      process.umask(before);
    }

    expect(modes).toEqual([0o711, 0o711]);
  });

  it('takes the agent token from --token-env, writing no file', async () => {
    let status = 0;

    const result = await run(
      ['--token-env', 'MY_AGENT_TOKEN'],
      async (url) => {
        const response = await fetch(`${url}/token`, {
          headers: { [AGENT_TOKEN_HEADER]: AGENT_TOKEN },
        });
        status = response.status;
      },
      { MY_AGENT_TOKEN: AGENT_TOKEN },
    );

    expect(result.code).toBe(0);
    expect(status).toBe(200);
    expect(result.stderr).toContain('"tokenEnv":"MY_AGENT_TOKEN"');
  });

  it.each([
    ['a short --token-env value', ['--token-env', 'SHORT'], { SHORT: 'abc' }],
    ['--token-env with --token-file', ['--token-env', 'X', '--token-file', 'f'], {}],
    ['a bad --port', ['--port', '70000'], {}],
    ['a --token-file-mode others may write', ['--token-file-mode', '666'], {}],
    ['an argument', ['now'], {}],
  ])('exits 2 on %s', async (_label, args, env) => {
    const result = await run(args, undefined, env);

    expect(result.code).toBe(2);
  });

  it("regression: a second agent on a taken port leaves the running one's token file alone", async () => {
    const file = join(root, 'running-agent-token');
    let before = '';
    let after = '';
    let second: Awaited<ReturnType<typeof run>> | undefined;

    await run(['--token-file', file], async (url) => {
      before = await readFile(file, 'utf8');
      second = await run(['--port', new URL(url).port, '--token-file', file]);
      after = await readFile(file, 'utf8');
    });

    expect(second?.code).toBe(1);
    expect(second?.stderr).toContain('tvm: address_in_use:');
    expect(after).toBe(before);
  });

  it('exits 1 when the port is taken', async () => {
    const taken = createServer();
    await new Promise<void>((listening) => taken.listen(0, '127.0.0.1', listening));
    const { port } = taken.address() as { port: number };
    try {
      const result = await run(['--port', String(port), '--token-file', join(root, 'taken')]);

      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`tvm: address_in_use: 127.0.0.1:${port} is in use`);
    } finally {
      taken.close();
    }
  });

  it('has --help', async () => {
    let stdout = '';
    const code = await main(['agent', '--help'], {
      env: {},
      cwd: root,
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: () => true },
    });

    expect([code, stdout]).toEqual([0, AGENT_HELP]);
  });
});
