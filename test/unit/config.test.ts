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
    expect(settings.policy.scopes).toEqual(new Set(['ba_1']));
  });

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
      /ACCESS_POLICY is not valid JSON; PROVIDER_BASE_URL must be a URL; UNSCOPED_SCOPE_MODE must be one of omit, empty; REFRESH_AHEAD_SECONDS must be an integer from 60 to 3600; TABLE_NAME is required/,
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
});
