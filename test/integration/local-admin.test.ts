/**
 * `npm run admin` as an operator runs it: `npm start` in a project directory
 * (a temporary one whose package.json, sources and node_modules link to this
 * repository, so `.local/` lands there), then `npm run admin -- '<event>'` and
 * `tvm admin '<event>'` as child processes in the same directory. DynamoDB is
 * the test run's DynamoDB Local (a table of its own); the provider is the
 * simulator inside the stack.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { TokenVendingClient } from '../../client/index.js';
import { ADMIN_EVENTS } from '../../functions/admin/admin-event.js';
import { LOCAL_INVALIDATE_NOTE } from '../../local/admin-cli.js';
import { DEMO_IDENTITY } from '../../local/local-identities.js';
import type { StackInfo } from '../../local/stack.js';
import { type NpmStartGroup, projectOfItsOwn, startNpmStartGroup } from '../support/npm-start.js';

const ROOT = resolve(import.meta.dirname, '../..');
const TVM = join(ROOT, 'bin/tvm.mjs');

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** What every child gets: no AWS_* or stack variables of the test process. */
const BASE_ENV = {
  PATH: process.env.PATH ?? '',
  HOME: process.env.HOME ?? tmpdir(),
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
};

let project: string;
let stackEnv: Record<string, string>;
let stack: NpmStartGroup;
let info: StackInfo;
const runs: Run[] = [];
/** Every access token and key the test saw; none may appear in any admin output. */
const secrets: string[] = [];

function exec(file: string, args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((done) => {
    execFile(file, args, { cwd: project, env, timeout: 30_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      const run = { code, stdout, stderr };
      runs.push(run);
      done(run);
    });
  });
}

/** `npm run --silent admin -- <event>` with the environment npm start was given (or `env`). */
const admin = (event: string, env: Record<string, string> = { ...BASE_ENV, ...stackEnv }) =>
  exec('npm', ['run', '--silent', 'admin', '--', event], env);

/** Resolves once the stack's output satisfies `done`; the stack is a child process. */
function waitForOutput(done: (text: string) => boolean, what: string): Promise<void> {
  return new Promise((ready, fail) => {
    if (done(stack.output())) {
      ready();
      return;
    }
    const timer = setTimeout(() => {
      stack.child.stdout?.off('data', check);
      fail(new Error(`npm start never printed ${what}:\n${stack.output()}`));
    }, 45_000);
    const check = () => {
      if (!done(stack.output())) return;
      clearTimeout(timer);
      stack.child.stdout?.off('data', check);
      ready();
    };
    stack.child.stdout?.on('data', check);
  });
}

/** The stack's JSON log lines. */
const logLines = (): Array<Record<string, unknown>> =>
  stack
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

const vendClient = () =>
  new TokenVendingClient({
    url: info.functionUrl,
    region: info.region,
    credentials: DEMO_IDENTITY,
  });

beforeAll(async () => {
  project = await projectOfItsOwn('tvf-local-admin-');
  stackEnv = {
    PORT: '0',
    DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'),
    TABLE_NAME: `local-admin-${process.pid}-${Date.now()}`,
    // Relative, as an operator writes it: resolved in the project directory.
    LOCAL_SECRETS_DIR: 'keys',
    KEY_ISSUE_BUSINESS_APPLICATION_IDS: 'ba_demo_2',
    // Requests spread over three handler instances, each with its own memory.
    LOCAL_INSTANCES: '3',
  };
  stack = await startNpmStartGroup(project, { ...BASE_ENV, ...stackEnv });
  info = JSON.parse(readFileSync(join(project, '.local/stack.json'), 'utf8')) as StackInfo;
  return async () => {
    stack.kill();
    await rm(project, { recursive: true, force: true });
  };
}, 60_000);

afterAll(() => {
  expect(runs.length).toBeGreaterThan(0);
  for (const run of runs) {
    for (const secret of secrets) {
      expect(run.stdout).not.toContain(secret);
      expect(run.stderr).not.toContain(secret);
    }
    // Simulator tokens start with sim_; no stack trace either.
    expect(`${run.stdout}${run.stderr}`).not.toMatch(/sim_|\n\s+at /);
  }
});

describe('npm run admin against npm start', () => {
  it('shows a scope vended through the stack in status: times, lease, in use, never the token', async () => {
    const asked = Date.now();
    const token = await vendClient().getToken({ scope: 'ba_demo_1' });
    const answeredWithinSeconds = Math.ceil((Date.now() - asked) / 1000);
    secrets.push(token.accessToken);

    // Exactly as the README and docs/operations.md show it (npm prints its banner first without --silent).
    const run = await exec('npm', ['run', 'admin', '--', '{"action":"status"}'], {
      ...BASE_ENV,
      ...stackEnv,
    });

    expect(run.code).toBe(0);
    const status = JSON.parse(run.stdout.slice(run.stdout.indexOf('\n{') + 1));
    const now = Math.floor(Date.now() / 1000);
    expect(status.now).toBeGreaterThan(now - 60);
    expect(status.tokens).toEqual([
      expect.objectContaining({
        scope: 'ba_demo_1',
        state: 'valid',
        issued_at: expect.any(Number),
        expires_at: expect.any(Number),
        seconds_left: expect.any(Number),
        lease: { held: false },
        in_use: true,
      }),
    ]);
    expect(status.tokens[0].seconds_left).toBeGreaterThan(7000);
    // The client keeps the earlier of the answer's expires_at and its own reckoning.
    expect(status.tokens[0].expires_at - token.expiresAt).toBeGreaterThanOrEqual(0);
    // ...which trails the stored expiry by at most how long the answer took.
    expect(status.tokens[0].expires_at - token.expiresAt).toBeLessThanOrEqual(
      answeredWithinSeconds + 1,
    );
    expect(status.key_jobs).toEqual([]);
  });

  it('refreshes a scope the stack then serves from DynamoDB: it unseals what admin sealed', async () => {
    const run = await admin('{"action":"refresh","scope":"ba_demo_2"}');

    expect(run).toMatchObject({ code: 0, stderr: '' });
    const refreshed = JSON.parse(run.stdout);
    expect(refreshed).toEqual({
      scope: 'ba_demo_2',
      status: 'refreshed',
      expires_at: expect.any(Number),
    });

    const token = await vendClient().getToken({ scope: 'ba_demo_2' });
    secrets.push(token.accessToken);
    const fingerprint = createHash('sha256').update(token.accessToken).digest('hex').slice(0, 16);
    const vendLine = (line: Record<string, unknown>) =>
      line.message === 'vend' && line.scope === 'ba_demo_2';
    await waitForOutput(() => logLines().some(vendLine), 'the ba_demo_2 vend line');

    // Not minted by the stack ('provider'): it read admin's token from DynamoDB.
    expect(logLines().filter(vendLine)).toEqual([
      expect.objectContaining({ outcome: 'l2', status: 200, tokenFingerprint: fingerprint }),
    ]);
    expect(token.expiresAt).toBeLessThanOrEqual(refreshed.expires_at);
    expect(token.expiresAt).toBeGreaterThanOrEqual(refreshed.expires_at - 1);
  });

  it('refresh and invalidate reach every instance of the running stack at once: the next vends show them', async () => {
    // Each of the three instances holds ba_demo_1's token in memory.
    const vendThree = async () => {
      const tokens: string[] = [];
      for (let i = 0; i < 3; i++)
        tokens.push((await vendClient().getToken({ scope: 'ba_demo_1' })).accessToken);
      secrets.push(...tokens);
      return tokens;
    };
    const [held] = await vendThree();

    const refresh = await admin('{"action":"refresh","scope":"ba_demo_1"}');
    const afterRefresh = await vendThree();
    const invalidate = await admin('{"action":"invalidate","scope":"ba_demo_1"}');
    const afterInvalidate = await vendThree();

    expect(refresh).toMatchObject({ code: 0, stderr: '' });
    expect(invalidate).toMatchObject({ code: 0, stderr: '' });
    // Regression: the answer said instances keep their copy up to 60 s, as in AWS.
    expect(JSON.parse(invalidate.stdout).note).toBe(LOCAL_INVALIDATE_NOTE);
    expect(new Set(afterRefresh).size).toBe(1);
    expect(afterRefresh[0]).not.toBe(held);
    expect(new Set(afterInvalidate).size).toBe(1);
    expect([held, afterRefresh[0]]).not.toContain(afterInvalidate[0]);
  });

  it('issues keys into LOCAL_SECRETS_DIR, mode 0600, through the vend URL', async () => {
    const run = await admin('{"action":"issue-keys","businessApplicationIds":["ba_demo_1"]}');

    expect(run).toMatchObject({ code: 0 });
    expect(JSON.parse(run.stdout)).toEqual({ issued: ['ba_demo_1'], skipped: [], failed: [] });
    const file = join(project, 'keys/basic-auth/ba_demo_1');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const keys = JSON.parse(readFileSync(file, 'utf8'));
    expect(keys.business_application_id).toBe('ba_demo_1');
    expect(typeof keys.key).toBe('string');
    // The key material stays in the file.
    secrets.push(keys.key, keys.secret);
  });

  it('fails a run with an unknown id, naming its code on stderr and printing the result', async () => {
    const run = await admin(
      '{"action":"issue-keys","businessApplicationIds":["ba_unknown","ba_demo_1"]}',
    );

    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^admin: key_issuing_failed: .*ba_unknown \(business_application_not_found\)$/m,
    );
    expect(JSON.parse(run.stdout)).toEqual({
      issued: [],
      skipped: ['ba_demo_1'],
      failed: [{ id: 'ba_unknown', code: 'business_application_not_found' }],
    });
  });

  it('clears a pending key the provider refused with a 409, with a reason; the next run issues', async () => {
    // Prepare: the stack's simulator answers the keys endpoint 409 once: ba_demo_1 stays pending.
    const injected = await fetch(`${info.providerUrl}/__simulator/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ endpoint: 'keys', fault: { kind: 'status', status: 409 } }),
    });
    expect(injected.ok).toBe(true);
    const forced = '{"action":"issue-keys","businessApplicationIds":["ba_demo_1"],"force":true}';
    const stuck = await admin(forced);
    const clear = (reason: string) =>
      admin(
        JSON.stringify({ action: 'clear-pending-key', businessApplicationId: 'ba_demo_1', reason }),
      );

    // Act
    const noReason = await clear(' ');
    const cleared = await clear('provider: nothing issued');
    const again = await clear('provider: nothing issued');
    const reissued = await admin(forced);

    // Assess
    expect(stuck.stderr).toMatch(/^admin: key_issuing_failed: .*ba_demo_1 \(upstream_error\)$/m);
    expect(noReason).toMatchObject({ code: 1, stdout: '' });
    expect(noReason.stderr).toMatch(
      /^admin: invalid_request: "clear-pending-key": reason: must not be empty/,
    );
    expect(cleared.code).toBe(0);
    expect(JSON.parse(cleared.stdout)).toMatchObject({
      business_application_id: 'ba_demo_1',
      cleared_idempotency_key: expect.stringMatching(/^[0-9a-f-]{36}$/),
      state: 'stored',
    });
    expect(again).toMatchObject({ code: 1 });
    expect(again.stderr).toMatch(/^admin: no_pending_key: /m);
    // The code once, however many layers name it (regression, review).
    expect(again.stderr).not.toContain('no_pending_key: no_pending_key');
    expect(JSON.parse(reissued.stdout)).toEqual({ issued: ['ba_demo_1'], skipped: [], failed: [] });
    const keys = JSON.parse(readFileSync(join(project, 'keys/basic-auth/ba_demo_1'), 'utf8'));
    secrets.push(keys.key, keys.secret);
  }, 60_000);

  it('regression: a run that reuses a pending key says so on its stderr, naming the key clear-pending-key clears', async () => {
    // Prepare: two 409s from the keys endpoint: a forced run leaves ba_demo_1
    // pending, and the next run, reusing its Idempotency-Key, fails too.
    const injected = await fetch(`${info.providerUrl}/__simulator/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ endpoint: 'keys', fault: { kind: 'status', status: 409 }, times: 2 }),
    });
    expect(injected.ok).toBe(true);
    await admin('{"action":"issue-keys","businessApplicationIds":["ba_demo_1"],"force":true}');

    // Act
    const retried = await admin('{"action":"issue-keys","businessApplicationIds":["ba_demo_1"]}');
    const cleared = await admin(
      JSON.stringify({
        action: 'clear-pending-key',
        businessApplicationId: 'ba_demo_1',
        reason: 'provider: nothing issued',
      }),
    );

    // Assess: the line the runbook sends an operator to, before clear-pending-key
    const line = retried.stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { message: string; idempotencyKey?: string })
      .find((l) => l.message === 'reusing the Idempotency-Key of an unfinished issue');
    expect(line?.idempotencyKey).toBe(JSON.parse(cleared.stdout).cleared_idempotency_key);
  }, 60_000);

  it('refuses a malformed event with invalid_request and every valid event', async () => {
    const run = await admin('{"action":"refresh"}');

    expect(run).toMatchObject({ code: 1, stdout: '' });
    expect(run.stderr).toMatch(/^admin: invalid_request: /);
    for (const event of ADMIN_EVENTS) expect(run.stderr).toContain(event);
  });

  it('regression: status shows the policy the stack serves, the version GET /grants answers, with its grants', async () => {
    // The stack was started without ACCESS_POLICY: it serves the demo policy.
    const grants = await vendClient().getGrants();

    const run = await admin('{"action":"status"}');

    expect(run).toMatchObject({ code: 0, stderr: '' });
    const { policy } = JSON.parse(run.stdout);
    expect(policy.version).toBe(grants.policyVersion);
    expect(policy.principals).toBeGreaterThan(0);
  });

  it('regression: an admin run puts no signature refusal in the stack log (its liveness probe is signed)', async () => {
    const run = await admin('{"action":"status"}');

    expect(run.code).toBe(0);
    const refusals = logLines().filter((line) =>
      String(line.message).startsWith('local URL refused a signature'),
    );
    expect(refusals).toEqual([]);
  });

  it("regression: names a missing table, not a stopped DynamoDB, when TABLE_NAME is not the stack's", async () => {
    const run = await admin('{"action":"status"}', {
      ...BASE_ENV,
      ...stackEnv,
      TABLE_NAME: 'no-such-table',
    });

    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      // Status reads tokens and key jobs at once: whichever fails first, one code.
      /^admin: store_unavailable: .*DynamoDB has no such table; is TABLE_NAME the one npm start uses\?$/m,
    );
  });

  it('invalidates every cached token', async () => {
    const run = await admin('{"action":"invalidate","all":true}');

    expect(run).toMatchObject({ code: 0, stderr: '' });
    const result = JSON.parse(run.stdout);
    // ba_demo_1 and ba_demo_2 vended above; the unscoped token fetched by the key job.
    expect([...result.invalidated].sort()).toEqual(['ba_demo_1', 'ba_demo_2', 'unscoped']);
  });
});

describe('tvm admin against npm start, with nothing but the stack file', () => {
  // No PORT, DYNAMODB_ENDPOINT, TABLE_NAME, LOCAL_SECRETS_DIR or KEY_ISSUE_*:
  // npm run admin finds them all in .local/stack.json.
  const tvm = (event: string) => exec(process.execPath, [TVM, 'admin', event], BASE_ENV);

  it('prints the same status JSON: no token left, each key job', async () => {
    const run = await tvm('{"action":"status"}');

    expect(run).toMatchObject({ code: 0, stderr: '' });
    const status = JSON.parse(run.stdout);
    expect(status.tokens).toEqual([]);
    expect(status.key_jobs).toEqual([
      expect.objectContaining({
        business_application_id: 'ba_demo_1',
        state: 'stored',
        awaiting_store: false,
      }),
      expect.objectContaining({
        business_application_id: 'ba_unknown',
        state: 'rejected',
        last_error: 'business_application_not_found',
      }),
    ]);
  });

  it('issues keys for the configured ids the stack file records', async () => {
    const run = await tvm('{"action":"issue-keys"}');

    expect(run).toMatchObject({ code: 0 });
    expect(JSON.parse(run.stdout)).toEqual({ issued: ['ba_demo_2'], skipped: [], failed: [] });
    expect(statSync(join(project, 'keys/basic-auth/ba_demo_2')).mode & 0o777).toBe(0o600);
  });
});

describe('stopping npm start', () => {
  it('removes the stack file and the sealing key (mode 0600 while it ran)', async () => {
    const keyFile = info.sealingKeyFile as string;
    expect(keyFile).toBe(join(project, '.local/sealing-key'));
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(Buffer.from(readFileSync(keyFile, 'utf8').trim(), 'base64')).toHaveLength(32);
    // 'close': every process of the group holding the output pipe has ended.
    const closed = new Promise<void>((done) => stack.child.once('close', () => done()));

    // npm alone, as `kill <pid>` or a process manager sends it: npm 11 passes
    // SIGTERM on only because the script execs node.
    process.kill(stack.child.pid as number, 'SIGTERM');
    await closed;

    expect(stack.output()).toContain('SIGTERM: stopping the local stack');
    expect(existsSync(join(project, '.local/stack.json'))).toBe(false);
    expect(existsSync(keyFile)).toBe(false);
  }, 20_000);
});
