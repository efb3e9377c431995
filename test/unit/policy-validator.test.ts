/**
 * The deploy-time validator and the functions' load-time check reject the
 * same documents with the same problems: AppConfig refuses to deploy exactly
 * the versions a function would refuse to load.
 */
import { describe, expect, it } from 'vitest';
import { AccessPolicy } from '../../functions/core/access-policy.js';
import { ConfigError } from '../../functions/core/errors.js';
import { handler } from '../../functions/policy-validator/handler.js';

const CHECKOUT = 'arn:aws:iam::111122223333:role/checkout';
const documents: Array<[string, string]> = [
  ['valid', JSON.stringify({ scopes: ['ba_1'], grants: [{ principal: CHECKOUT, scopes: ['*'] }] })],
  [
    'valid with key-issuing ids',
    JSON.stringify({ scopes: [], grants: [], keyIssuing: { businessApplicationIds: ['ba_9'] } }),
  ],
  ['not JSON', '{"scopes": ['],
  ['an unknown field', JSON.stringify({ scopes: [], grants: [], admins: [] })],
  ['a bad principal', JSON.stringify({ scopes: [], grants: [{ principal: 'checkout' }] })],
  [
    'an unlisted scope',
    JSON.stringify({ scopes: ['ba_1'], grants: [{ principal: CHECKOUT, scopes: ['ba_2'] }] }),
  ],
  ['the reserved scope name', JSON.stringify({ scopes: ['unscoped'], grants: [] })],
  [
    'a repeated key-issuing id',
    JSON.stringify({ scopes: [], grants: [], keyIssuing: { businessApplicationIds: ['a', 'a'] } }),
  ],
  [
    'a malformed key-issuing id',
    JSON.stringify({ scopes: [], grants: [], keyIssuing: { businessApplicationIds: ['../x'] } }),
  ],
];

/** The problems after "is invalid:", or "valid". */
const verdict = (run: () => unknown): string => {
  try {
    run();
    return 'valid';
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message.replace(/^.*? is (?:invalid|not valid JSON)/, '');
  }
};

describe('the AppConfig validator', () => {
  it.each(documents)(
    'judges a document with %s exactly as the functions do',
    async (_label, text) => {
      const event = {
        applicationId: 'abc1234',
        configurationProfileId: 'ur8hx2f',
        configurationVersion: '7',
        content: Buffer.from(text).toString('base64'),
        uri: 'hosted',
      };
      let byValidator = 'valid';
      await handler(event).catch((error: unknown) => {
        byValidator = verdict(() => {
          throw error;
        });
      });

      expect(byValidator).toBe(verdict(() => AccessPolicy.parse(text)));
      expect(byValidator === 'valid').toBe(_label.startsWith('valid'));
    },
  );

  it('names the version it refused', async () => {
    const content = Buffer.from('{"scopes":[],"grants":[{}]}').toString('base64');

    await expect(handler({ configurationVersion: '12', content })).rejects.toThrow(
      /^access policy version 12 is invalid: grants\.0\.principal/,
    );
  });
});
