import { describe, expect, it } from 'vitest';
import { EnvReader, readVendSettings } from '../../functions/core/config.js';
import { ConfigError } from '../../functions/core/errors.js';

const POLICY = JSON.stringify({
  scopes: ['ba_1'],
  grants: [{ principal: 'arn:aws:iam::111122223333:role/checkout', scopes: ['ba_1'] }],
});

describe('readVendSettings', () => {
  it('reads a complete environment with documented defaults', () => {
    const settings = readVendSettings(
      new EnvReader({
        ACCESS_POLICY: POLICY,
        PROVIDER_BASE_URL: 'https://p.example',
        TABLE_NAME: 't',
      }),
    );

    expect(settings).toMatchObject({
      providerBaseUrl: 'https://p.example',
      unscopedScopeMode: 'omit',
      refreshAheadSeconds: 900,
      tableName: 't',
    });
    expect(settings.policy.kind).toBe('inline');
    expect(settings.policy.kind === 'inline' && settings.policy.policy.scopes).toEqual(
      new Set(['ba_1']),
    );
  });

  it('reads the policy from AppConfig when the three POLICY_APPCONFIG_ variables are set', () => {
    const settings = readVendSettings(
      new EnvReader({
        POLICY_APPCONFIG_APPLICATION: 'app',
        POLICY_APPCONFIG_ENVIRONMENT: 'env',
        POLICY_APPCONFIG_PROFILE: 'access-policy',
        KEY_ISSUER_ARN: 'arn:aws:iam::111122223333:role/issuer',
        PROVIDER_BASE_URL: 'https://p.example',
        TABLE_NAME: 't',
      }),
    );

    expect(settings.policy).toEqual({
      kind: 'appconfig',
      application: 'app',
      environment: 'env',
      profile: 'access-policy',
      maxAgeSeconds: 60,
      fixedGrants: [{ principal: 'arn:aws:iam::111122223333:role/issuer', unscoped: true }],
    });
  });

  it.each([['0'], ['14'], ['3601'], ['soon']])(
    'refuses POLICY_MAX_AGE_SECONDS=%s, saying what the bound comes from',
    (value) => {
      expect(() =>
        readVendSettings(
          new EnvReader({
            ACCESS_POLICY: POLICY,
            POLICY_MAX_AGE_SECONDS: value,
            TABLE_NAME: 't',
            PROVIDER_BASE_URL: 'https://p.example',
          }),
        ),
      ).toThrow(
        'POLICY_MAX_AGE_SECONDS must be an integer from 15 to 3600 (AppConfig refuses polls closer together than 15 s)',
      );
    },
  );

  it('reports every problem at once, naming each variable', () => {
    const read = () =>
      readVendSettings(
        new EnvReader({
          ACCESS_POLICY: '{',
          PROVIDER_BASE_URL: 'not a url',
          UNSCOPED_SCOPE_MODE: 'blank',
          REFRESH_AHEAD_SECONDS: '5',
        }),
      );

    expect(read).toThrow(ConfigError);
    expect(read).toThrow(
      /ACCESS_POLICY is not valid JSON \(line 1, column \d+\); PROVIDER_BASE_URL must be a URL; UNSCOPED_SCOPE_MODE must be one of omit, empty; REFRESH_AHEAD_SECONDS must be an integer from 60 to 3600; TABLE_NAME is required/,
    );
  });

  it('accepts UNSCOPED_SCOPE_MODE=empty and a default table name where one is given', () => {
    const settings = readVendSettings(
      new EnvReader({
        ACCESS_POLICY: POLICY,
        PROVIDER_BASE_URL: 'http://127.0.0.1:1',
        UNSCOPED_SCOPE_MODE: 'empty',
      }),
      { tableName: 'token-vending-local' },
    );

    expect(settings.unscopedScopeMode).toBe('empty');
    expect(settings.tableName).toBe('token-vending-local');
  });

  it.each([
    'http://p.example',
    'http://127.0.0.1.evil.com',
    'http://localhost.evil.com',
    'http://10.0.0.1:8080',
    'http://[::ffff:127.0.0.1]',
    'ftp://p.example',
    'ws://localhost',
    'file:///etc/provider',
  ])('regression: PROVIDER_BASE_URL=%s (secrets in clear) is a configuration error', (url) => {
    const read = () =>
      readVendSettings(
        new EnvReader({ ACCESS_POLICY: POLICY, PROVIDER_BASE_URL: url, TABLE_NAME: 't' }),
      );

    expect(read).toThrow(ConfigError);
    expect(read).toThrow(
      'Invalid configuration: PROVIDER_BASE_URL must be an https: URL (http: only for localhost, 127.0.0.0/8 or [::1])',
    );
  });

  it.each([
    'https://key:secret@p.example',
    'https://key@p.example',
    'http://key:secret@127.0.0.1:8788',
  ])(
    'regression: PROVIDER_BASE_URL=%s with credentials in it is a configuration error that does not quote them',
    (url) => {
      const read = () =>
        readVendSettings(
          new EnvReader({ ACCESS_POLICY: POLICY, PROVIDER_BASE_URL: url, TABLE_NAME: 't' }),
        );

      expect(read).toThrow(
        'Invalid configuration: PROVIDER_BASE_URL must not contain a user name or password',
      );
      expect(read).not.toThrow(/secret|key@/);
    },
  );

  it.each([
    'https://p.example',
    'https://10.0.0.1:8443/base',
    'http://localhost:8080',
    'HTTP://LOCALHOST',
    'http://127.0.0.1:1',
    'http://127.255.255.254',
    'http://[::1]:9',
  ])('accepts PROVIDER_BASE_URL=%s (https:, or http: on loopback)', (url) => {
    const settings = readVendSettings(
      new EnvReader({ ACCESS_POLICY: POLICY, PROVIDER_BASE_URL: url, TABLE_NAME: 't' }),
    );

    expect(settings.providerBaseUrl).toBe(url);
  });

  it('reports a clear-text PROVIDER_BASE_URL with the other problems, without echoing it', () => {
    const read = () =>
      readVendSettings(
        new EnvReader({
          ACCESS_POLICY: POLICY,
          PROVIDER_BASE_URL: 'http://user:hunter2@p.example',
          REFRESH_AHEAD_SECONDS: '5',
        }),
      );

    const message = (() => {
      try {
        read();
      } catch (error) {
        return (error as Error).message;
      }
      throw new Error('expected a ConfigError');
    })();

    expect(message).toMatch(
      /PROVIDER_BASE_URL must be an https: URL .*; REFRESH_AHEAD_SECONDS must be an integer from 60 to 3600; TABLE_NAME is required$/,
    );
    expect(message).not.toContain('hunter2');
    expect(message).not.toContain('p.example');
  });
});
