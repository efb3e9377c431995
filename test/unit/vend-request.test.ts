import { describe, expect, it } from 'vitest';
import { InvalidRequestError } from '../../functions/core/errors.js';
import { parseVendRequest } from '../../functions/core/vend-request.js';

const UNKNOWN = 'Unknown parameter; use scope, min_ttl and revoked.';

/** Every detail parseVendRequest may give, written out here so a new one must be added on purpose. */
const OUR_DETAILS = [
  'scope must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$',
  'min_ttl must be an integer from 0 to 3600',
  'A parameter has an empty name; use scope, min_ttl and revoked.',
  UNKNOWN,
  'Parameter "scope" is repeated.',
  'Parameter "min_ttl" is repeated.',
  'revoked must be a token fingerprint: 16 lower-case hex digits',
  'Parameter "revoked" is repeated.',
];

/** Runs `fn`, expecting an InvalidRequestError; returns it. */
function rejection(rawQuery: string): InvalidRequestError {
  try {
    parseVendRequest(rawQuery);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect(error).toMatchObject({ code: 'invalid_request', status: 400 });
    return error as InvalidRequestError;
  }
  throw new Error(`expected ${JSON.stringify(rawQuery)} to be rejected`);
}

describe('parseVendRequest', () => {
  it('defaults to the unscoped token with min_ttl 300', () => {
    // Act
    const request = parseVendRequest('');

    // Assess
    expect(request).toEqual({ minTtl: 300 });
    expect(request.scope).toBeUndefined();
  });

  it('reads a scope and applies the default min_ttl', () => {
    // Act
    const request = parseVendRequest('scope=ba_123');

    // Assess
    expect(request).toEqual({ scope: 'ba_123', minTtl: 300 });
  });

  it.each([
    ['0', 0],
    ['3600', 3600],
    ['0042', 42],
  ])('accepts min_ttl=%s', (raw, expected) => {
    // Act
    const request = parseVendRequest(`scope=ba_1&min_ttl=${raw}`);

    // Assess
    expect(request.minTtl).toBe(expected);
  });

  it.each([
    ['00300', 300],
    [`${'0'.repeat(30)}3600`, 3600],
    [`${'0'.repeat(30)}7`, 7],
  ])(
    'regression: min_ttl=%s with leading zeros is read by its value, whatever its length',
    (raw, expected) => {
      // Act
      const request = parseVendRequest(`min_ttl=${raw}`);

      // Assess
      expect(request.minTtl).toBe(expected);
    },
  );

  it.each([
    '3601',
    '9999',
    '10000',
    `${'0'.repeat(30)}3601`,
    '-1',
    '1.5',
    '1e3',
    'abc',
    '',
    ' 5',
    '0x10',
    '%EF%BC%95',
  ])('rejects min_ttl=%j', (raw) => {
    // Act
    const error = rejection(`min_ttl=${raw}`);

    // Assess
    expect(error.message).toBe('min_ttl must be an integer from 0 to 3600');
  });

  it('accepts a scope of 128 characters', () => {
    // Prepare
    const scope = `b${'a'.repeat(127)}`;

    // Act
    const request = parseVendRequest(`scope=${scope}`);

    // Assess
    expect(request.scope).toBe(scope);
  });

  it.each([
    ['a leading dot', '.ba_1'],
    ['a leading dash', '-ba_1'],
    ['129 characters', `b${'a'.repeat(128)}`],
    ['a space', 'ba%201'],
    ['a plus (a space in a form)', 'ba+1'],
    ['empty', ''],
    ['a slash', 'ba%2F1'],
    ['a non-ASCII letter', 'b%C3%A4'],
    ['a newline', 'ba_1%0A'],
  ])('rejects a scope with %s', (_label, raw) => {
    // Act
    const error = rejection(`scope=${raw}`);

    // Assess
    expect(error.message).toBe('scope must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$');
  });

  it('decodes a percent-encoded scope', () => {
    // Act
    const request = parseVendRequest('scope=ba%3A1');

    // Assess
    expect(request).toEqual({ scope: 'ba:1', minTtl: 300 });
  });

  it.each([
    'scope=ba_1&scope=ba_2',
    'scope=ba_1&scope=ba_1',
    'min_ttl=10&min_ttl=20',
    'scope=ba_1&min_ttl=10&scope=ba_1',
  ])('rejects the repeated parameter in %s', (query) => {
    // Act
    const error = rejection(query);

    // Assess
    expect(error.message).toMatch(/^Parameter "(scope|min_ttl)" is repeated\.$/);
  });

  it.each([
    'foo=1',
    'scope=ba_1&Scope=ba_1',
    'scope=ba_1&min_ttl=10&extra',
    'constructor=x',
    'toString=1',
    '__proto__=x',
    'scope=ba_1&__proto__=1&__proto__=2',
  ])('rejects the unknown parameter in %s', (query) => {
    // Act
    const error = rejection(query);

    // Assess
    expect(error.message).toBe(UNKNOWN);
  });

  it('regression: __proto__ is not silently ignored', () => {
    // Act
    const error = rejection('__proto__=ba_1');

    // Assess
    expect(error.message).toBe(UNKNOWN);
  });

  it('choice: an unknown parameter is not named, however plain (detail never echoes the caller)', () => {
    // Act
    const error = rejection('scopes=ba_1');

    // Assess
    expect(error.message).toBe(UNKNOWN);
    expect(error.message).not.toContain('scopes');
  });

  it.each([
    ['a long name', 'x'.repeat(200)],
    ['markup', '%3Cscript%3Ealert(1)%3C%2Fscript%3E'],
    ['a control character', 'a%00b'],
    ['a newline', 'a%0Ab'],
    ['a quote', 'a%22b'],
  ])('never echoes an unknown parameter name with %s', (_label, name) => {
    // Prepare
    const decoded = decodeURIComponent(name);

    // Act
    const unknown = rejection(`${name}=1`);
    const repeated = rejection(`${name}=1&${name}=2`);

    // Assess
    for (const error of [unknown, repeated]) {
      expect(error.message).toBe(UNKNOWN);
      expect(error.message).not.toContain(decoded);
    }
  });

  it('regression: ?=x (an empty parameter name) gets our own detail, not the schema library message', () => {
    // Act
    const error = rejection('=x');

    // Assess
    expect(error.message).toBe('A parameter has an empty name; use scope, min_ttl and revoked.');
  });

  it.each(
    [
      '=x',
      '=',
      '&=',
      '=&=',
      'scope=ba_1&=x',
      '%00=1',
      '%=1',
      '%',
      '%%',
      '%zz=1',
      'scope',
      'scope=',
      'scope=%',
      'scope=%00',
      'min_ttl',
      'min_ttl=',
      'min_ttl=-1',
      'min_ttl=1e3',
      'min_ttl=%',
      'min_ttl=3600.0',
      'min_ttl=99999999999999999999',
      '__proto__=1',
      '__proto__[scope]=1',
      'constructor=1',
      'constructor.prototype=1',
      'hasOwnProperty=1',
      'valueOf=1',
      `${'n'.repeat(10_000)}=1`,
      `scope=${'s'.repeat(10_000)}`,
      `min_ttl=${'9'.repeat(10_000)}`,
      'sc%C3%B6pe=1',
      '%F0%9F%94%91=1',
      'scope=%F0%9F%94%91',
      '%ED%A0%80=1',
      'scope=ba_1%0D%0AX-Injected:%201',
      'scope[]=ba_1',
      'scope.x=1',
      'SCOPE=ba_1',
      'scope=ba_1&scope=ba_1',
      'min_ttl=1&min_ttl=1',
      'scope=ba_1&min_ttl=1&min_ttl=x&=&%00',
    ].map((query) => [
      query.length > 40 ? `${query.slice(0, 16)}... (${query.length})` : query,
      query,
    ]),
  )('answers the hostile query %j with one of our own fixed details', (_label, query) => {
    // Act
    const error = rejection(query);

    // Assess
    expect(OUR_DETAILS).toContain(error.message);
    for (const library of ['Expected', 'Invalid key', 'received', 'Received']) {
      expect(error.message).not.toContain(library);
    }
  });

  it('never echoes a rejected scope or min_ttl value', () => {
    // Prepare
    const odd = `<b>${'z'.repeat(300)}`;

    // Act
    const badScope = rejection(`scope=${encodeURIComponent(odd)}`);
    const badTtl = rejection(`min_ttl=${encodeURIComponent(odd)}`);

    // Assess
    expect(badScope.message).not.toContain('zzz');
    expect(badTtl.message).not.toContain('zzz');
  });
});

describe('revoked: a token the provider refused, by fingerprint', () => {
  it('reads a 16 hex digit fingerprint beside scope and min_ttl', () => {
    expect(parseVendRequest('min_ttl=3600&revoked=0123456789abcdef&scope=ba_1')).toEqual({
      scope: 'ba_1',
      minTtl: 3600,
      revoked: '0123456789abcdef',
    });
  });

  it.each(['', '0123456789ABCDEF', '0123456789abcde', '0123456789abcdef0', 'sim_token_itself'])(
    'rejects %j without echoing it',
    (value) => {
      const error = rejection(`revoked=${value}`);
      expect(error.message).toBe('revoked must be a token fingerprint: 16 lower-case hex digits');
    },
  );

  it('rejects a repeated revoked', () => {
    expect(rejection('revoked=0123456789abcdef&revoked=0123456789abcdef').message).toBe(
      'Parameter "revoked" is repeated.',
    );
  });
});
