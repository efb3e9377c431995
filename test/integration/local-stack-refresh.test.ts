/**
 * What `npm start` adds for `npm run admin` and the refresh schedule, in-process
 * against DynamoDB Local: the scheduled refresh on the stack's own timer (fired
 * on demand here), the sealing key file beside the stack file, and the stack
 * file's new fields.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { TokenVendingClient } from '../../client/index.js';
import { AesGcmSealer } from '../../functions/adapters/sealers.js';
import { ConfigError } from '../../functions/core/errors.js';
import { DEMO_IDENTITY } from '../../local/local-identities.js';
import { type LocalStack, startLocalStack } from '../../local/stack.js';
import { dynamoClient } from '../support/dynamodb.js';
import { fakeTimers } from '../support/fake-timers.js';
import { quietLogger } from '../support/vend-harness.js';

describe('the local stack with REFRESH_INTERVAL_SECONDS=3600', () => {
  let dir: string;
  let stack: LocalStack;
  const fake = fakeTimers();
  const logger = quietLogger();
  const info = vi.spyOn(logger, 'info');
  const stackFile = () => join(dir, '.local/stack.json');

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tvf-stack-refresh-'));
    stack = await startLocalStack(
      {
        PORT: '0',
        DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'),
        TABLE_NAME: `stack-refresh-${process.pid}-${Date.now()}`,
        // A 3600 s refresh-ahead window (half of 7200) plus one interval and a
        // minute cover a whole token life: every token in use is due.
        REFRESH_INTERVAL_SECONDS: '3600',
        REFRESH_AHEAD_SECONDS: '3600',
        LOCAL_SECRETS_DIR: join(dir, 'keys'),
        KEY_ISSUE_BUSINESS_APPLICATION_IDS: 'ba_demo_1, ba_demo_2',
      },
      { stackFile: stackFile(), logger, timers: fake.timers },
    );
    return async () => {
      await stack?.stop();
      await rm(dir, { recursive: true, force: true });
    };
  });

  afterAll(() => {
    // No log line of the refresh may carry a token (the simulator's start with sim_).
    expect(JSON.stringify(info.mock.calls)).not.toContain('sim_');
  });

  it('writes the sealing key beside the stack file, mode 0600, and names it there', async () => {
    const written = JSON.parse(readFileSync(stackFile(), 'utf8'));

    expect(written).toMatchObject({
      sealingKeyFile: join(dir, '.local/sealing-key'),
      localSecretsDir: join(dir, 'keys'),
      keyIssuing: { businessApplicationIds: ['ba_demo_1', 'ba_demo_2'] },
      refreshAheadSeconds: 3600,
      refreshIntervalSeconds: 3600,
      inUseWindowSeconds: 3600,
    });
    expect(statSync(written.sealingKeyFile).mode & 0o777).toBe(0o600);
    expect(statSync(stackFile()).mode & 0o777).toBe(0o600);
  });

  it('seals the tokens it caches with the key in that file', async () => {
    const token = await new TokenVendingClient({
      url: stack.info.functionUrl,
      credentials: DEMO_IDENTITY,
    }).getToken({ scope: 'ba_demo_1' });
    const key = Buffer.from(
      readFileSync(stack.info.sealingKeyFile as string, 'utf8').trim(),
      'base64',
    );
    const ddb = dynamoClient();
    const { Item } = await ddb.send(
      new GetItemCommand({
        TableName: stack.info.tableName,
        Key: { pk: { S: 'TOKEN#ba_demo_1' } },
      }),
    );
    ddb.destroy();

    // What `npm run admin` does with that file: unseal (and seal) the stack's items.
    const sealed = Item?.sealed_token?.B as Uint8Array;
    expect(await new AesGcmSealer(key).unseal(sealed, 'TOKEN#ba_demo_1')).toBe(token.accessToken);
  });

  it('refreshes a scope in use when its timer fires, and logs the report', async () => {
    const sim = stack.simulator;
    expect(fake.pending.map((p) => p.ms)).toEqual([3_600_000]);
    // Cached but never vended: not in use.
    expect(await stack.runtime.tokens.refresh('ba_demo_2')).toMatchObject({ status: 'refreshed' });
    const before = sim?.stats.tokenRequestsByScope.ba_demo_1 ?? 0;
    info.mockClear();

    await fake.fire();

    expect(sim?.stats.tokenRequestsByScope.ba_demo_1).toBe(before + 1);
    expect(info).toHaveBeenCalledWith(
      'scheduled refresh',
      expect.objectContaining({ refreshed: ['ba_demo_1'], failed: [] }),
    );
    // ba_demo_2 was refreshed by hand, never vended: not in use, left alone.
    expect(info.mock.calls.find(([message]) => message === 'scheduled refresh')?.[1]).toMatchObject(
      {
        unused: ['ba_demo_2'],
      },
    );
    // The next run is scheduled.
    expect(fake.pending.map((p) => p.ms)).toEqual([3_600_000]);
  });

  it('on stop clears its timer and removes the stack file and the sealing key', async () => {
    const [handle] = fake.pending;

    await stack.stop();

    expect(fake.cleared).toContain(handle);
    expect(existsSync(stackFile())).toBe(false);
    expect(existsSync(join(dir, '.local/sealing-key'))).toBe(false);
  });
});

describe('the local stack configuration for the refresh and the key job', () => {
  const failure = (env: Record<string, string>) =>
    startLocalStack(
      { PORT: '0', DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'), ...env },
      { stackFile: null, logger: quietLogger() },
    ).then(
      async (stack) => {
        await stack.stop();
        throw new Error('the stack started');
      },
      (error: unknown) => error as Error,
    );

  it('refuses bad values, naming every one at once', async () => {
    const error = await failure({
      REFRESH_INTERVAL_SECONDS: '10',
      IN_USE_WINDOW_SECONDS: 'an hour',
      KEY_ISSUE_BUSINESS_APPLICATION_IDS: '["ba_1", 7]',
      KEY_ISSUE_REQUEST_BODY: '[1]',
      UNSCOPED_SCOPE_MODE: 'sometimes',
    });

    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toContain('REFRESH_INTERVAL_SECONDS must be an integer from 60 to 3600');
    expect(error.message).toContain('IN_USE_WINDOW_SECONDS must be an integer from 300 to 86400');
    expect(error.message).toContain('KEY_ISSUE_BUSINESS_APPLICATION_IDS entry 2');
    expect(error.message).toContain('KEY_ISSUE_REQUEST_BODY must be a JSON object');
    expect(error.message).toContain('UNSCOPED_SCOPE_MODE must be one of omit, empty');
  });
});
