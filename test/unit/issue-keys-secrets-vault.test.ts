import {
  CreateSecretCommand,
  DescribeSecretCommand,
  InternalServiceError,
  InvalidRequestException,
  PutSecretValueCommand,
  ResourceExistsException,
  ResourceNotFoundException,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  SecretsManagerKeyVault,
  secretsPrefixProblem,
} from '../../functions/adapters/secrets-manager-key-vault.js';
import { ConfigError } from '../../functions/core/errors.js';
import { KeyVaultError, KeyVaultUnavailableError } from '../../functions/issue-keys/errors.js';
import { rejection } from '../support/rejection.js';

const sm = mockClient(SecretsManagerClient);
const client = new SecretsManagerClient({
  region: 'us-east-1',
  credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
});
const KEY = '6f1c7a52-3f0e-4c55-9a0b-2a4c9a0d1e11';
const ANSWER = '{"business_application_id":"ba_1","key":"bak_1","secret":"bas_1"}';
const body = (text: string) => new TextEncoder().encode(text);
const exists = () => new ResourceExistsException({ message: 'exists', $metadata: {} });

beforeEach(() => sm.reset());

describe('SecretsManagerKeyVault', () => {
  it('creates <prefix>/basic-auth/<id> with ClientRequestToken = the idempotency key', async () => {
    // Prepare
    sm.on(CreateSecretCommand).resolves({ VersionId: KEY });
    const vault = new SecretsManagerKeyVault({ client, prefix: 'token-vending/prod' });

    // Act
    const stored = await vault.put('ba_1', body(ANSWER), KEY);

    // Assess
    expect(stored).toEqual({ location: 'token-vending/prod/basic-auth/ba_1', version: KEY });
    expect(sm.commandCalls(CreateSecretCommand)[0]?.args[0].input).toMatchObject({
      Name: 'token-vending/prod/basic-auth/ba_1',
      ClientRequestToken: KEY,
      SecretString: ANSWER,
    });
    expect(sm.commandCalls(PutSecretValueCommand)).toHaveLength(0);
  });

  it('an existing secret gets a new version: PutSecretValue with the same ClientRequestToken', async () => {
    // Prepare
    sm.on(CreateSecretCommand).rejects(exists());
    sm.on(PutSecretValueCommand).resolves({ VersionId: KEY });
    const vault = new SecretsManagerKeyVault({ client, prefix: 'tvm' });

    // Act
    const stored = await vault.put('ba_1', body(ANSWER), KEY);

    // Assess
    expect(stored.version).toBe(KEY);
    expect(sm.commandCalls(PutSecretValueCommand)[0]?.args[0].input).toEqual({
      SecretId: 'tvm/basic-auth/ba_1',
      ClientRequestToken: KEY,
      SecretString: ANSWER,
    });
  });

  it('writes bytes that are not UTF-8 as SecretBinary, unchanged', async () => {
    // Prepare
    sm.on(CreateSecretCommand).resolves({ VersionId: KEY });
    const vault = new SecretsManagerKeyVault({ client, prefix: 'tvm' });
    const raw = Uint8Array.of(0xff, 0xfe, 0x00, 0x41);

    // Act
    await vault.put('ba_1', raw, KEY);

    // Assess
    const input = sm.commandCalls(CreateSecretCommand)[0]?.args[0].input;
    expect(input?.SecretString).toBeUndefined();
    expect(input?.SecretBinary).toEqual(raw);
  });

  it('keeps a byte order mark and every byte of a UTF-8 answer', async () => {
    // Prepare
    sm.on(CreateSecretCommand).resolves({ VersionId: KEY });
    const vault = new SecretsManagerKeyVault({ client, prefix: 'tvm' });
    const text = '\ufeff{"key":"k\u00e9"}\r\n';

    // Act
    await vault.put('ba_1', body(text), KEY);

    // Assess
    expect(sm.commandCalls(CreateSecretCommand)[0]?.args[0].input.SecretString).toBe(text);
  });

  it('wraps SDK failures as store_failed, without the value', async () => {
    // Prepare
    sm.on(CreateSecretCommand).rejects(exists());
    sm.on(PutSecretValueCommand).rejects(
      new InvalidRequestException({ message: 'scheduled for deletion', $metadata: {} }),
    );
    const vault = new SecretsManagerKeyVault({ client, prefix: 'tvm' });

    // Act
    const error = await vault.put('ba_1', body(ANSWER), KEY).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(KeyVaultError);
    expect(error).toMatchObject({
      code: 'store_failed',
      message:
        'Secrets Manager PutSecretValue of tvm/basic-auth/ba_1 failed (InvalidRequestException)',
    });
    expect((error as Error).cause).toBeInstanceOf(InvalidRequestException);
  });

  it('writes ":" as "@" (Secrets Manager names cannot hold ":"), and refuses bad ids', () => {
    // Prepare
    const vault = new SecretsManagerKeyVault({ client, prefix: 'tvm' });

    // Act
    const name = vault.locationOf('merchant:ba.1');
    const bad = (() => {
      try {
        vault.locationOf('../x');
        return undefined;
      } catch (error) {
        return error;
      }
    })();

    // Assess
    expect(name).toBe('tvm/basic-auth/merchant@ba.1');
    expect(bad).toMatchObject({ code: 'invalid_request' });
  });

  it('refuses a prefix Secrets Manager cannot take', () => {
    expect(secretsPrefixProblem('token-vending/prod')).toBeUndefined();
    for (const prefix of ['', '/abs', 'trailing/', 'with space', 'colon:x']) {
      expect(secretsPrefixProblem(prefix)).toBeDefined();
    }
    expect(() => new SecretsManagerKeyVault({ client, prefix: 'a b' })).toThrow(ConfigError);
  });
});

describe('SecretsManagerKeyVault.has', () => {
  const vault = () => new SecretsManagerKeyVault({ client, prefix: 'token-vending/prod' });

  it('says keys are stored when the secret has a current value, from its metadata alone', async () => {
    sm.on(DescribeSecretCommand).resolves({
      Name: 'token-vending/prod/basic-auth/ba_1',
      VersionIdsToStages: { v1: ['AWSPREVIOUS'], v2: ['AWSCURRENT'] },
    });

    expect(await vault().has('ba_1')).toBe(true);
    expect(sm.commandCalls(DescribeSecretCommand)[0]?.args[0].input).toEqual({
      SecretId: 'token-vending/prod/basic-auth/ba_1',
    });
  });

  it('says not stored when there is no secret, or one without a value (a placeholder)', async () => {
    sm.on(DescribeSecretCommand)
      .rejectsOnce(new ResourceNotFoundException({ message: 'none', $metadata: {} }))
      .resolvesOnce({ Name: 'x' });

    expect(await vault().has('ba_1')).toBe(false);
    expect(await vault().has('ba_1')).toBe(false);
  });

  it('says not stored for a secret holding only a version staged AWSPENDING (never made current)', async () => {
    sm.on(DescribeSecretCommand).resolves({
      Name: 'token-vending/prod/basic-auth/ba_1',
      VersionIdsToStages: { v1: ['AWSPENDING'] },
    });

    expect(await vault().has('ba_1')).toBe(false);
  });

  it('refuses a secret scheduled for deletion: keys issued now could not be stored', async () => {
    sm.on(DescribeSecretCommand).resolves({
      Name: 'x',
      DeletedDate: new Date(),
      VersionIdsToStages: { v1: ['AWSCURRENT'] },
    });

    const error = await rejection(vault().has('ba_1'), KeyVaultUnavailableError);

    expect(error.message).toContain('scheduled for deletion');
  });

  it('fails with key_vault_unavailable when Secrets Manager cannot answer', async () => {
    sm.on(DescribeSecretCommand).rejects(
      new InternalServiceError({ message: 'down', $metadata: {} }),
    );

    const error = await rejection(vault().has('ba_1'), KeyVaultUnavailableError);

    expect(error.code).toBe('key_vault_unavailable');
  });
});
