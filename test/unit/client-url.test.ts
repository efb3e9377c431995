/**
 * The client's `url` option: bearer tokens never cross a network in clear, so
 * only a loopback host may be reached over http:.
 */
import { describe, expect, it } from 'vitest';
import { TokenVendingClient, TokenVendingError } from '../../client/index.js';
import { isLoopbackHost } from '../../functions/core/loopback.js';

const CREDENTIALS = {
  accessKeyId: 'AKIAUNITTEST00000001',
  secretAccessKey: 'unitTestSecretAccessKey00000000000000000',
};

const ACCEPTED = [
  'https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws',
  'https://vend.example.com/base/',
  'http://localhost:8787',
  'http://LOCALHOST',
  'http://127.0.0.1:8787',
  'http://127.10.20.30',
  'http://127.1:8787',
  'http://[::1]:8787',
];

const REFUSED = [
  'http://vend.example.com',
  'http://abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws',
  'http://10.0.0.5:8787',
  'http://128.0.0.1',
  'http://127.example.com',
  'http://localhost.example.com',
  'http://vend.localhost',
  'http://[::2]',
  'http://[::ffff:127.0.0.1]',
  'http://0.0.0.0:8787',
];

function configError(url: string): TokenVendingError | undefined {
  try {
    new TokenVendingClient({ url, region: 'eu-west-1', credentials: CREDENTIALS });
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(TokenVendingError);
    return error as TokenVendingError;
  }
}

describe('the url option', () => {
  it.each(ACCEPTED)('accepts %s', (url) => {
    expect(configError(url)).toBeUndefined();
  });

  it.each(REFUSED)('refuses %s as invalid_config, explaining the https rule', (url) => {
    const error = configError(url);

    expect(error).toMatchObject({ code: 'invalid_config', status: 0 });
    expect(error?.message).toBe(
      'invalid_config: url must be https: unless its host is loopback (localhost, 127.0.0.0/8, [::1])',
    );
  });

  it('takes for loopback exactly what the vend function does (PROVIDER_BASE_URL)', () => {
    for (const url of [...ACCEPTED, ...REFUSED]) {
      const { protocol, hostname } = new URL(url);
      const accepted = configError(url) === undefined;
      expect(accepted, url).toBe(protocol === 'https:' || isLoopbackHost(hostname));
    }
  });
});
