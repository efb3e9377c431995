import {
  GetSecretValueCommand,
  InternalServiceError,
  ResourceNotFoundException,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-vitest/extend';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  CredentialsSecretError,
  SecretsManagerCredentials,
  StaticCredentials,
} from '../../functions/adapters/credentials.js';
import { ConfigError, CredentialsUnavailableError } from '../../functions/core/errors.js';
import type { CredentialsSource } from '../../functions/core/ports.js';

type Logger = ConstructorParameters<typeof SecretsManagerCredentials>[0]['logger'];

const SECRET_ID =
  'arn:aws:secretsmanager:us-east-1:111122223333:secret:provider-credentials-AbCdEf';
const V1 = { key: 'pk_live_key_1', secret: 'sk_live_secret_one' };
const V2 = { key: 'pk_live_key_2', secret: 'sk_live_secret_two' };
const START = new Date('2030-01-01T00:00:00Z');

const sm = mockClient(SecretsManagerClient);

const secretValue = (creds: { key: string; secret: string }, versionId: string) => ({
  SecretString: JSON.stringify(creds),
  VersionId: versionId,
});

let logger: {
  info: ReturnType<typeof vi.fn>;
  warn: ReturnType<typeof vi.fn>;
  error: ReturnType<typeof vi.fn>;
};

function source(maxAgeSeconds?: number): SecretsManagerCredentials {
  return new SecretsManagerCredentials({
    client: new SecretsManagerClient({ region: 'us-east-1' }),
    secretId: SECRET_ID,
    logger: logger as unknown as Logger,
    ...(maxAgeSeconds === undefined ? {} : { maxAgeSeconds }),
  });
}

const internalError = () =>
  new InternalServiceError({ message: 'An internal error occurred', $metadata: {} });
const notFound = () =>
  new ResourceNotFoundException({
    message: "Secrets Manager can't find the secret",
    $metadata: {},
  });

beforeEach(() => {
  sm.reset();
  logger = { info: vi.fn(), warn: vi.fn(), error: vi.fn() };
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(START);
});

afterEach(() => {
  vi.useRealTimers();
});

afterAll(() => {
  sm.restore();
});

describe('SecretsManagerCredentials', () => {
  it('parses the secret and records its version', async () => {
    // Prepare
    sm.on(GetSecretValueCommand).resolves(secretValue(V1, 'ver-1'));

    // Act
    const credentials = await source().get();

    // Assess
    expect(credentials).toEqual({ ...V1, version: 'ver-1' });
    expect(sm).toHaveReceivedCommandExactlyOnceWith(GetSecretValueCommand, { SecretId: SECRET_ID });
  });

  it('caches the secret: a second get does not call Secrets Manager', async () => {
    // Prepare
    sm.on(GetSecretValueCommand).resolves(secretValue(V1, 'ver-1'));
    const credentials = source();
    await credentials.get();
    vi.setSystemTime(START.getTime() + 299_000);

    // Act
    const second = await credentials.get();

    // Assess
    expect(second).toEqual({ ...V1, version: 'ver-1' });
    expect(sm).toHaveReceivedCommandTimes(GetSecretValueCommand, 1);
  });

  it('parses the secret once per value: cached reads on the vend path return the same object', async () => {
    // Regression (bench): every L1 hit parsed the cached SecretString twice and
    // validated it again, which put the L1 hit p99 over 0.2 ms.
    sm.on(GetSecretValueCommand)
      .resolvesOnce(secretValue(V1, 'ver-1'))
      .resolves(secretValue(V2, 'ver-2'));
    const credentials = source();
    const first = await credentials.get();

    const second = await credentials.get();
    const rotated = await credentials.get({ forceRefresh: true });

    expect(second).toBe(first);
    expect(rotated).toEqual({ ...V2, version: 'ver-2' });
    expect(await credentials.get()).toBe(rotated);
  });

  it('concurrent reads on a cold instance fetch the secret once (they shared no read in flight)', async () => {
    // Regression (bench): each of a cold instance's concurrent first vends
    // fetched the secret, as Powertools' cache does not join reads in flight.
    let answer: (value: ReturnType<typeof secretValue>) => void = () => undefined;
    sm.on(GetSecretValueCommand).callsFake(
      () => new Promise<ReturnType<typeof secretValue>>((done) => (answer = done)),
    );
    const credentials = source();

    const reads = Array.from({ length: 10 }, () => credentials.get());
    await vi.waitFor(() => expect(sm).toHaveReceivedCommandTimes(GetSecretValueCommand, 1));
    answer(secretValue(V1, 'ver-1'));
    const values = await Promise.all(reads);

    expect(sm).toHaveReceivedCommandTimes(GetSecretValueCommand, 1);
    for (const value of values) expect(value).toEqual({ ...V1, version: 'ver-1' });
  });

  it('concurrent reads after the max age share the re-read, and its failure is logged once', async () => {
    sm.on(GetSecretValueCommand).resolvesOnce(secretValue(V1, 'ver-1')).rejects(internalError());
    const credentials = source();
    await credentials.get();
    vi.setSystemTime(START.getTime() + 301_000);

    const values = await Promise.all(Array.from({ length: 5 }, () => credentials.get()));

    expect(sm).toHaveReceivedCommandTimes(GetSecretValueCommand, 2);
    for (const value of values) expect(value).toEqual({ ...V1, version: 'ver-1' });
    expect(logger.warn).toHaveBeenCalledTimes(1);
  });

  it('a forced read asked while a plain read is under way fetches after it, and keeps the newer value', async () => {
    // Regression (review): a slow plain read answered after a forced read and
    // put the older version back in the cache, and plain reads asked after the
    // forced one joined the slow read and got the older version.
    let answerFirst: (value: ReturnType<typeof secretValue>) => void = () => undefined;
    sm.on(GetSecretValueCommand)
      .callsFakeOnce(
        () => new Promise<ReturnType<typeof secretValue>>((done) => (answerFirst = done)),
      )
      .resolves(secretValue(V2, 'ver-2'));
    const credentials = source();

    const plain = credentials.get();
    await vi.waitFor(() => expect(sm).toHaveReceivedCommandTimes(GetSecretValueCommand, 1));
    const forced = credentials.get({ forceRefresh: true });
    answerFirst(secretValue(V1, 'ver-1'));

    expect(await plain).toEqual({ ...V1, version: 'ver-1' });
    expect(await forced).toEqual({ ...V2, version: 'ver-2' });
    expect(await credentials.get()).toEqual({ ...V2, version: 'ver-2' });
    expect(sm).toHaveReceivedCommandTimes(GetSecretValueCommand, 2);
  });

  it('a plain read asked while a forced read fails gets the last good value, not the failure', async () => {
    // Plain reads never share a forced read: its failure is its caller's answer alone.
    sm.on(GetSecretValueCommand).resolvesOnce(secretValue(V1, 'ver-1')).rejects(internalError());
    const credentials = source();
    await credentials.get();

    const forced = credentials.get({ forceRefresh: true });
    const plain = credentials.get();

    await expect(forced).rejects.toThrow(CredentialsUnavailableError);
    expect(await plain).toEqual({ ...V1, version: 'ver-1' });
  });

  it('a plain read asked while a forced read is under way answers at once with the value in use', async () => {
    // Regression (review): plain reads queued behind a forced read, so one
    // slow re-read (a version check, or after a 401) held every vend, L1 hits included.
    sm.on(GetSecretValueCommand)
      .resolvesOnce(secretValue(V1, 'ver-1'))
      .callsFake(() => new Promise(() => undefined)); // the re-read never answers
    const credentials = source();
    await credentials.get();

    void credentials.get({ forceRefresh: true }).catch(() => undefined);
    const plain = await credentials.get();

    expect(plain).toEqual({ ...V1, version: 'ver-1' });
  });

  it('after a rotation to an unusable secret is rolled back, reads are served from the cache again', async () => {
    // Regression (review): the rolled-back value equalled the one in use, and
    // that path left "fetch again" set: every read fetched the secret.
    sm.on(GetSecretValueCommand)
      .resolvesOnce(secretValue(V1, 'ver-1'))
      .resolvesOnce({ SecretString: 'not json', VersionId: 'ver-bad' })
      .resolves(secretValue(V1, 'ver-1'));
    const credentials = source();
    await credentials.get();
    vi.setSystemTime(START.getTime() + 301_000);
    await credentials.get(); // the unusable value: the last good one is kept
    vi.setSystemTime(START.getTime() + 332_000);
    await credentials.get(); // fetched again: the rolled-back value

    for (let i = 0; i < 5; i++) await credentials.get();

    expect(sm).toHaveReceivedCommandTimes(GetSecretValueCommand, 3);
  });

  it('a cold instance fetches an unusable secret again on its next read, so a fix is seen at once', async () => {
    // Regression (review): Powertools cached the unusable value, and each read
    // parsed it again and failed until its 5-minute max age.
    sm.on(GetSecretValueCommand)
      .resolvesOnce({ SecretString: 'not json', VersionId: 'ver-bad' })
      .resolves(secretValue(V2, 'ver-2'));
    const credentials = source();
    await expect(credentials.get()).rejects.toThrow(CredentialsSecretError);

    vi.setSystemTime(START.getTime() + 1_000);
    const fixed = await credentials.get();

    expect(fixed).toEqual({ ...V2, version: 'ver-2' });
    expect(sm).toHaveReceivedCommandTimes(GetSecretValueCommand, 2);
  });

  it('after a rotation wrote an unusable secret, the first read past the 30 s back-off fetches it again', async () => {
    sm.on(GetSecretValueCommand)
      .resolvesOnce(secretValue(V1, 'ver-1'))
      .resolvesOnce({ SecretString: 'not json', VersionId: 'ver-bad' })
      .resolves(secretValue(V2, 'ver-2'));
    const credentials = source();
    await credentials.get();
    vi.setSystemTime(START.getTime() + 301_000);
    expect(await credentials.get()).toEqual({ ...V1, version: 'ver-1' });

    vi.setSystemTime(START.getTime() + 332_000);
    const fixed = await credentials.get();

    expect(fixed).toEqual({ ...V2, version: 'ver-2' });
    expect(sm).toHaveReceivedCommandTimes(GetSecretValueCommand, 3);
  });

  it('re-reads on forceRefresh and picks up a new version', async () => {
    // Prepare
    sm.on(GetSecretValueCommand)
      .resolvesOnce(secretValue(V1, 'ver-1'))
      .resolves(secretValue(V2, 'ver-2'));
    const credentials = source();
    await credentials.get();

    // Act
    const refreshed = await credentials.get({ forceRefresh: true });
    const cached = await credentials.get();

    // Assess
    expect(refreshed).toEqual({ ...V2, version: 'ver-2' });
    expect(cached).toEqual({ ...V2, version: 'ver-2' });
    expect(sm).toHaveReceivedCommandTimes(GetSecretValueCommand, 2);
    expect(logger.info).toHaveBeenCalledWith('credentials secret has a new version', {
      credentialsVersion: 'ver-2',
    });
  });

  it('re-reads after the 5-minute max age', async () => {
    // Prepare
    sm.on(GetSecretValueCommand)
      .resolvesOnce(secretValue(V1, 'ver-1'))
      .resolves(secretValue(V2, 'ver-2'));
    const credentials = source();
    await credentials.get();
    vi.setSystemTime(START.getTime() + 301_000);

    // Act
    const later = await credentials.get();

    // Assess
    expect(later).toEqual({ ...V2, version: 'ver-2' });
    expect(sm).toHaveReceivedCommandTimes(GetSecretValueCommand, 2);
  });

  it('honours a custom max age', async () => {
    // Prepare
    sm.on(GetSecretValueCommand).resolves(secretValue(V1, 'ver-1'));
    const credentials = source(10);
    await credentials.get();
    vi.setSystemTime(START.getTime() + 11_000);

    // Act
    await credentials.get();

    // Assess
    expect(sm).toHaveReceivedCommandTimes(GetSecretValueCommand, 2);
  });

  it.each([
    ['InternalServiceError', internalError],
    ['ResourceNotFoundException', notFound],
  ])(
    'a forced re-read that fails with %s says so (the cached value is not known to be current), warns, and keeps the cache for plain reads',
    async (_name, failure) => {
      // Prepare
      sm.on(GetSecretValueCommand).resolvesOnce(secretValue(V1, 'ver-1')).rejects(failure());
      const credentials = source();
      await credentials.get();

      // Act
      const forced = await credentials.get({ forceRefresh: true }).catch((e: unknown) => e);
      const plain = await credentials.get();

      // Assess
      expect(forced).toBeInstanceOf(CredentialsUnavailableError);
      expect(forced).toMatchObject({ name: 'CredentialsUnavailableError' });
      expect(plain).toEqual({ ...V1, version: 'ver-1' });
      expect(sm).toHaveReceivedCommandTimes(GetSecretValueCommand, 2);
      expect(logger.warn).toHaveBeenCalledTimes(1);
      expect(logger.warn).toHaveBeenCalledWith(
        'credentials secret could not be read',
        expect.any(Object),
      );
      expect(JSON.stringify(logger.warn.mock.calls)).not.toContain(V1.secret);
    },
  );

  it('keeps the last good credentials when the re-read after max age fails', async () => {
    // Prepare
    sm.on(GetSecretValueCommand).resolvesOnce(secretValue(V1, 'ver-1')).rejects(internalError());
    const credentials = source();
    await credentials.get();
    vi.setSystemTime(START.getTime() + 301_000);

    // Act
    const result = await credentials.get();

    // Assess
    expect(result).toEqual({ ...V1, version: 'ver-1' });
    expect(logger.warn).toHaveBeenCalledTimes(1);
  });

  it('after a failed re-read, waits 30 s before calling Secrets Manager again', async () => {
    // Prepare
    sm.on(GetSecretValueCommand)
      .resolvesOnce(secretValue(V1, 'ver-1'))
      .rejectsOnce(internalError())
      .resolves(secretValue(V2, 'ver-2'));
    const credentials = source();
    await credentials.get();
    vi.setSystemTime(START.getTime() + 301_000);
    await credentials.get();

    // Act
    const forcedDuring = await credentials.get({ forceRefresh: true }).catch((e: unknown) => e);
    const during = await credentials.get();
    const callsDuring = sm.commandCalls(GetSecretValueCommand).length;
    vi.setSystemTime(START.getTime() + 332_000);
    const after = await credentials.get();

    // Assess
    expect(forcedDuring).toBeInstanceOf(CredentialsUnavailableError);
    expect(during.version).toBe('ver-1');
    expect(callsDuring).toBe(2);
    expect(after.version).toBe('ver-2');
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(3);
  });

  it.each([
    ['InternalServiceError', internalError],
    ['ResourceNotFoundException', notFound],
  ])(
    'throws CredentialsUnavailableError when the first read fails with %s',
    async (_name, failure) => {
      // Prepare
      const sdkError = failure();
      sm.on(GetSecretValueCommand).rejects(sdkError);

      // Act
      const error = await source()
        .get()
        .catch((e: unknown) => e);

      // Assess
      expect(error).toBeInstanceOf(CredentialsUnavailableError);
      expect(error).toMatchObject({
        name: 'CredentialsUnavailableError',
        message: 'The credentials secret could not be read.',
      });
      // The SDK's error is kept as the cause (Powertools wraps it once more).
      const cause = (error as Error).cause as Error;
      expect(cause === sdkError || cause.cause === sdkError).toBe(true);
    },
  );

  it.each([
    ['not JSON', 'key=pk_live_x;secret=sk_live_leaky_value'],
    ['missing the secret', JSON.stringify({ key: 'pk_live_x', sk: 'sk_live_leaky_value' })],
    ['an empty secret', JSON.stringify({ key: 'pk_live_x', secret: '' })],
    ['a non-string secret', JSON.stringify({ key: 'sk_live_leaky_value', secret: 42 })],
    ['a JSON string', JSON.stringify('sk_live_leaky_value')],
  ])(
    'throws CredentialsSecretError for a SecretString that is %s, without quoting it',
    async (_label, secretString) => {
      // Prepare
      sm.on(GetSecretValueCommand).resolves({ SecretString: secretString, VersionId: 'ver-1' });

      // Act
      const error = await source()
        .get()
        .catch((e: unknown) => e);

      // Assess
      expect(error).toBeInstanceOf(CredentialsSecretError);
      expect(error).toMatchObject({ name: 'CredentialsSecretError' });
      expect((error as Error).message).toBe('The credentials secret is not JSON {"key","secret"}.');
      expect(JSON.stringify(error)).not.toContain('leaky');
      expect(String((error as Error).stack)).not.toContain('leaky');
      expect((error as Error).cause).toBeUndefined();
    },
  );

  it('throws CredentialsSecretError for a secret without SecretString', async () => {
    // Prepare
    sm.on(GetSecretValueCommand).resolves({ SecretBinary: Uint8Array.from([1]), VersionId: 'v' });

    // Act
    const error = await source()
      .get()
      .catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(CredentialsSecretError);
    expect(error).toMatchObject({ name: 'CredentialsSecretError' });
  });
});

describe('a rotation that writes an unusable secret', () => {
  const broken = { SecretString: '{"key":"pk_live_x",', VersionId: 'ver-2' };

  it('keeps serving the last good value for plain reads and logs an error, never quoting the content', async () => {
    // Prepare
    sm.on(GetSecretValueCommand).resolvesOnce(secretValue(V1, 'ver-1')).resolves(broken);
    const credentials = source();
    await credentials.get();
    vi.setSystemTime(START.getTime() + 301_000);

    // Act
    const plain = await credentials.get();
    const forced = await credentials.get({ forceRefresh: true }).catch((e: unknown) => e);

    // Assess
    expect(plain).toEqual({ ...V1, version: 'ver-1' });
    expect(forced).toBeInstanceOf(CredentialsUnavailableError);
    expect(logger.error).toHaveBeenCalledWith(
      'credentials secret is unusable; using the cached value',
      expect.any(Object),
    );
    expect(JSON.stringify(logger.error.mock.calls)).not.toContain('pk_live_x');
  });

  it('is a kind of unavailability at a cold start (the core then serves L2 or answers 503)', async () => {
    sm.on(GetSecretValueCommand).resolves(broken);

    const error = await source()
      .get()
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(CredentialsSecretError);
    expect(error).toBeInstanceOf(CredentialsUnavailableError);
  });
});

describe('a provider key containing ":" (Basic joins key:secret literally)', () => {
  it('is refused when the secret is loaded, without quoting the key or the secret', async () => {
    // Prepare
    sm.on(GetSecretValueCommand).resolves(
      secretValue({ key: 'pk_live:leaky', secret: 'sk_live_leaky_value' }, 'ver-1'),
    );

    // Act
    const error = await source()
      .get()
      .catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(CredentialsSecretError);
    expect((error as Error).message).toContain('contains ":"');
    expect(JSON.stringify({ m: (error as Error).message })).not.toContain('leaky');
  });

  it('is refused by StaticCredentials (local stack) with a ConfigError', () => {
    expect(() => new StaticCredentials({ key: 'a:b', secret: 's', version: 'local' })).toThrow(
      ConfigError,
    );
  });
});

describe('StaticCredentials', () => {
  it('returns its pair until swapped', async () => {
    // Prepare
    const credentials = new StaticCredentials({ ...V1, version: 'static-1' });
    const port: CredentialsSource = credentials;

    // Act
    const before = await port.get({ forceRefresh: true });
    credentials.set({ ...V2, version: 'static-2' });
    const after = await credentials.get();

    // Assess
    expect(before).toEqual({ ...V1, version: 'static-1' });
    expect(after).toEqual({ ...V2, version: 'static-2' });
  });
});
