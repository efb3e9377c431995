import { describe, expect, it } from 'vitest';
import { EnvReader } from '../../functions/core/config.js';
import {
  parseBusinessApplicationIds,
  readKeyIssuingSettings,
} from '../../functions/issue-keys/config.js';
import { InvalidKeyIssuingRequestError } from '../../functions/issue-keys/errors.js';
import { parseKeyIssuingEvent } from '../../functions/issue-keys/event.js';

function invalid(event: unknown): InvalidKeyIssuingRequestError {
  try {
    parseKeyIssuingEvent(event);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidKeyIssuingRequestError);
    return error as InvalidKeyIssuingRequestError;
  }
  throw new Error('expected the event to be refused');
}

describe('parseKeyIssuingEvent', () => {
  it.each([
    [{}, { force: false }],
    [null, { force: false }],
    [undefined, { force: false }],
    [
      { businessApplicationIds: ['ba_1', 'ba:2'] },
      { businessApplicationIds: ['ba_1', 'ba:2'], force: false },
    ],
    [
      { businessApplicationIds: ['ba_1'], force: true },
      { businessApplicationIds: ['ba_1'], force: true },
    ],
    [
      { action: 'issue-keys', businessApplicationIds: ['ba_1'], force: false },
      { businessApplicationIds: ['ba_1'], force: false },
    ],
    [
      { businessApplicationIds: ['ba_1'], force: true, forceId: 'CHG-1234' },
      { businessApplicationIds: ['ba_1'], force: true, forceId: 'CHG-1234' },
    ],
  ])('accepts %j', (event, expected) => {
    expect(parseKeyIssuingEvent(event)).toEqual(expected);
  });

  it('lists every problem and the expected fields, quoting no value', () => {
    // Act
    const error = invalid({
      businessApplicationIds: ['ok', 'not/valid', 7],
      force: 'yes',
      extra: 'secret-looking-value',
    });

    // Assess
    expect(error.code).toBe('invalid_request');
    expect(error.message).toContain('businessApplicationIds.1: expected /^[A-Za-z0-9]');
    expect(error.message).toContain('businessApplicationIds.2: expected string');
    expect(error.message).toContain('force: expected boolean');
    expect(error.message).toContain('unknown field "extra"');
    expect(error.message).toContain('expected {"businessApplicationIds"?');
    expect(error.message).not.toContain('secret-looking-value');
    expect(error.message).not.toContain('not/valid');
    expect(error.stack).toBe(`InvalidKeyIssuingRequestError: ${error.message}`);
  });

  it.each([
    [[], 'the event must be a JSON object'],
    ['issue', 'the event must be a JSON object'],
    [{ force: true }, 'force needs businessApplicationIds'],
    [{ businessApplicationIds: [] }, 'businessApplicationIds: expected >=1'],
    [{ action: 'status' }, 'action: expected "issue-keys"'],
    [{ businessApplicationIds: Array(101).fill('ba') }, 'businessApplicationIds: expected <=100'],
  ])('refuses %j', (event, problem) => {
    expect(invalid(event).message).toContain(problem);
  });
});

describe('KEY_ISSUE_BUSINESS_APPLICATION_IDS', () => {
  it.each([
    ['', []],
    ['ba_1', ['ba_1']],
    [' ba_1 , ba:2,, ba_1 ', ['ba_1', 'ba:2']],
    ['["ba_1", "ba_2", "ba_1"]', ['ba_1', 'ba_2']],
  ])('reads %j', (raw, ids) => {
    expect(parseBusinessApplicationIds(raw)).toEqual({ ids, problems: [] });
  });

  it.each([
    ['["ba_1", 2]', 'KEY_ISSUE_BUSINESS_APPLICATION_IDS entry 2 must be a string matching'],
    ['[broken', 'KEY_ISSUE_BUSINESS_APPLICATION_IDS is not valid JSON'],
    ['ba_1, ../x', 'KEY_ISSUE_BUSINESS_APPLICATION_IDS entry 2 must be a string matching'],
  ])('refuses %j', (raw, problem) => {
    expect(parseBusinessApplicationIds(raw).problems[0]).toContain(problem);
  });
});

describe('readKeyIssuingSettings', () => {
  const base = {
    PROVIDER_BASE_URL: 'https://api.provider.example',
    VEND_URL: 'https://abc.lambda-url.eu-west-1.on.aws',
  };

  it('reads every setting', () => {
    // Prepare
    const reader = new EnvReader({
      ...base,
      KEY_ISSUE_BUSINESS_APPLICATION_IDS: 'ba_1,ba_2',
      KEY_ISSUE_REQUEST_BODY: '{"label":"x"}',
    });

    // Act
    const settings = readKeyIssuingSettings(reader);
    reader.done();

    // Assess
    expect(settings).toEqual({
      providerBaseUrl: base.PROVIDER_BASE_URL,
      vendUrl: base.VEND_URL,
      businessApplicationIds: ['ba_1', 'ba_2'],
      requestBody: '{"label":"x"}',
    });
  });

  it('sends no body when KEY_ISSUE_REQUEST_BODY is unset, and allows http on loopback', () => {
    const reader = new EnvReader({ ...base, PROVIDER_BASE_URL: 'http://127.0.0.1:8788' });
    const settings = readKeyIssuingSettings(reader);
    reader.done();
    expect(settings.requestBody).toBeUndefined();
    expect(settings.businessApplicationIds).toEqual([]);
  });

  it('reports every problem at once', () => {
    const reader = new EnvReader({
      PROVIDER_BASE_URL: 'http://api.provider.example',
      KEY_ISSUE_REQUEST_BODY: '[1]',
      KEY_ISSUE_BUSINESS_APPLICATION_IDS: '["a/b"]',
    });
    readKeyIssuingSettings(reader);
    expect(() => reader.done()).toThrow(
      /PROVIDER_BASE_URL must be an https: URL.*VEND_URL is required.*entry 1 must be.*KEY_ISSUE_REQUEST_BODY must be a JSON object/,
    );
  });
});
