import { describe, expect, it } from 'vitest';
import { DEMO_IDENTITY, type LocalIdentity } from '../../local/local-identities.js';
import {
  canonicalQueryString,
  canonicalUri,
  parseQuery,
  type SigV4Request,
  uriEncode,
  verifySigV4,
} from '../../local/sigv4-verifier.js';
import {
  type SignOptions,
  signedAsReceived,
  signRequest,
  TEMPORARY_IDENTITY as TEMPORARY,
} from '../support/sigv4.js';

const OTHER: LocalIdentity = {
  accessKeyId: 'AKIALOCALOTHER000002',
  secretAccessKey: 'otherSecretAccessKey00000000000000000000',
  arn: 'arn:aws:sts::111122223333:assumed-role/checkout/session-1',
};
const identities = [DEMO_IDENTITY, OTHER, TEMPORARY];
const SIGNED_AT = new Date('2025-06-01T12:00:00Z');
const NOW = SIGNED_AT.getTime() + 1_000;

/** Signs with the SDK signer, then builds what the server would see. */
const signed = (
  options: Partial<SignOptions> = {},
  wire?: { rawQueryString?: string; path?: string; body?: Uint8Array },
): Promise<SigV4Request> =>
  signedAsReceived(
    { identity: DEMO_IDENTITY, signingDate: SIGNED_AT, port: 8787, ...options },
    wire,
  );

const verify = (request: SigV4Request, now: number = NOW, region = 'us-east-1') =>
  verifySigV4(request, { identities, region, now });

describe('verifySigV4', () => {
  it('accepts a request signed by the AWS SDK signer and names the identity', async () => {
    const result = verify(await signed({ query: { scope: 'ba_demo_1', min_ttl: '300' } }));
    expect(result).toEqual({ ok: true, identity: DEMO_IDENTITY });
  });

  it('picks the identity by access key', async () => {
    const result = verify(await signed({ identity: OTHER }));
    expect(result.ok && result.identity.arn).toBe(OTHER.arn);
  });

  it('accepts a Date as the clock', async () => {
    const request = await signed();
    expect(verifySigV4(request, { identities, region: 'us-east-1', now: new Date(NOW) }).ok).toBe(
      true,
    );
  });

  it('rejects a request without Authorization', async () => {
    const request = await signed();
    delete request.headers.authorization;
    expect(verify(request)).toEqual({ ok: false, reason: 'missing Authorization header' });
  });

  it('rejects another scheme', async () => {
    const request = await signed();
    request.headers.authorization = 'Basic Zm9vOmJhcg==';
    expect(verify(request).ok).toBe(false);
  });

  it('rejects a wrong secret', async () => {
    const result = verify(await signed({ secretAccessKey: 'x'.repeat(40) }));
    expect(result).toEqual({ ok: false, reason: 'signature does not match' });
  });

  it('rejects an unknown access key', async () => {
    const stranger = { ...DEMO_IDENTITY, accessKeyId: 'AKIAUNKNOWN000000000' };
    expect(verify(await signed({ identity: stranger }))).toEqual({
      ok: false,
      reason: 'unknown access key id',
    });
  });

  it('rejects a query tampered with after signing', async () => {
    const request = await signed(
      { query: { scope: 'ba_demo_1' } },
      { rawQueryString: 'scope=ba_demo_2' },
    );
    expect(verify(request).ok).toBe(false);
  });

  it('rejects an added query parameter', async () => {
    const request = await signed(
      { query: { scope: 'ba_demo_1' } },
      { rawQueryString: 'min_ttl=0&scope=ba_demo_1' },
    );
    expect(verify(request).ok).toBe(false);
  });

  it('rejects a changed path or method', async () => {
    expect(verify(await signed({}, { path: '/healthz' })).ok).toBe(false);
    const request = await signed();
    expect(verify({ ...request, method: 'DELETE' }).ok).toBe(false);
  });

  it('rejects the wrong region and the wrong service', async () => {
    expect(verify(await signed({ region: 'eu-west-1' }))).toEqual({
      ok: false,
      reason: 'credential scope has the wrong region',
    });
    expect(verify(await signed(), NOW, 'eu-west-1').ok).toBe(false);
    expect(verify(await signed({ service: 'execute-api' }))).toEqual({
      ok: false,
      reason: 'credential scope has the wrong service',
    });
  });

  it('allows 5 minutes of clock skew either way, and no more', async () => {
    const request = await signed();
    const t = SIGNED_AT.getTime();
    expect(verify(request, t + 5 * 60_000).ok).toBe(true);
    expect(verify(request, t - 5 * 60_000).ok).toBe(true);
    expect(verify(request, t + 5 * 60_000 + 1_000).ok).toBe(false);
    expect(verify(request, t - 5 * 60_000 - 1_000).ok).toBe(false);
  });

  it('rejects an X-Amz-Date that was changed or differs from the scope date', async () => {
    const request = await signed();
    request.headers['x-amz-date'] = '20250601T120001Z';
    expect(verify(request).ok).toBe(false);
    request.headers['x-amz-date'] = '20250602T120000Z';
    expect(verify(request, Date.parse('2025-06-02T12:00:00Z'))).toEqual({
      ok: false,
      reason: 'credential scope date differs from X-Amz-Date',
    });
    delete request.headers['x-amz-date'];
    expect(verify(request).ok).toBe(false);
  });

  it('requires host among the signed headers', async () => {
    const request = await signed({ unsignableHeaders: new Set(['host']) });
    expect(request.headers.authorization).not.toContain('host;');
    expect(verify(request)).toEqual({ ok: false, reason: 'host is not a signed header' });
  });

  it('rejects a changed signed header', async () => {
    const request = await signed();
    request.headers.host = '127.0.0.1:9999';
    expect(verify(request).ok).toBe(false);
  });

  it('checks the body against X-Amz-Content-Sha256', async () => {
    const request = await signed(
      { method: 'POST', body: '{"a":1}', headers: { 'content-type': 'application/json' } },
      { body: new TextEncoder().encode('{"a":2}') },
    );
    expect(verify(request)).toEqual({
      ok: false,
      reason: 'X-Amz-Content-Sha256 does not match the body',
    });
  });

  it('hashes the body itself when X-Amz-Content-Sha256 is absent', async () => {
    const request = await signed({ method: 'POST', body: 'hello' });
    // The SDK adds and signs x-amz-content-sha256; sign again without it.
    const bare = await signRequest({
      identity: DEMO_IDENTITY,
      signingDate: SIGNED_AT,
      port: 8787,
      method: 'POST',
      body: 'hello',
      unsignableHeaders: new Set(['x-amz-content-sha256']),
    });
    delete bare.headers['x-amz-content-sha256'];
    expect(verify({ ...request, headers: bare.headers }).ok).toBe(true);
    expect(
      verify({ ...request, headers: bare.headers, body: new TextEncoder().encode('hellO') }).ok,
    ).toBe(false);
  });

  it('accepts UNSIGNED-PAYLOAD whatever the body', async () => {
    const request = await signed(
      { method: 'POST', body: 'a', headers: { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' } },
      { body: new TextEncoder().encode('b') },
    );
    expect(verify(request).ok).toBe(true);
  });

  describe('temporary credentials (X-Amz-Security-Token)', () => {
    const withToken = (sessionToken: string | undefined, identity: LocalIdentity = TEMPORARY) =>
      signed({ identity, ...(sessionToken !== undefined ? { sessionToken } : {}) });

    it("accepts a request carrying the identity's session token, signed", async () => {
      const request = await withToken(TEMPORARY.sessionToken);
      expect(request.headers.authorization).toContain('x-amz-security-token');
      expect(verify(request)).toEqual({ ok: true, identity: TEMPORARY });
    });

    it('rejects a request without the session token', async () => {
      expect(verify(await withToken(undefined))).toEqual({
        ok: false,
        reason: 'missing X-Amz-Security-Token for temporary credentials',
      });
    });

    it('rejects a wrong session token, even one signed as sent', async () => {
      for (const token of ['other-token', `${TEMPORARY.sessionToken}x`, 'l']) {
        expect(verify(await withToken(token))).toEqual({
          ok: false,
          reason: 'X-Amz-Security-Token does not match',
        });
      }
    });

    it('rejects a session token changed after signing', async () => {
      const request = await withToken(TEMPORARY.sessionToken);
      request.headers['x-amz-security-token'] = 'other-token';
      expect(verify(request).ok).toBe(false);
    });

    it('rejects a repeated session token header', async () => {
      const request = await withToken(TEMPORARY.sessionToken);
      const repeated = {
        ...request,
        headers: {
          ...request.headers,
          'x-amz-security-token': [TEMPORARY.sessionToken, TEMPORARY.sessionToken],
        },
      };
      expect(verify(repeated)).toEqual({
        ok: false,
        reason: 'repeated X-Amz-Security-Token header',
      });
    });

    it('rejects a session token sent with a key that has none', async () => {
      const result = verify(await withToken('any-token', DEMO_IDENTITY));
      expect(result).toEqual({
        ok: false,
        reason: 'X-Amz-Security-Token sent for credentials that have no session token',
      });
    });

    it('never puts the token or the secret into a reason', async () => {
      const reasons = await Promise.all(
        [undefined, 'other-token'].map(async (t) => JSON.stringify(verify(await withToken(t)))),
      );
      for (const reason of reasons) {
        expect(reason).not.toContain(TEMPORARY.sessionToken);
        expect(reason).not.toContain(TEMPORARY.secretAccessKey);
      }
    });
  });

  describe('malformed requests', () => {
    const withAuthorization = async (authorization: string | string[]) => {
      const request = await signed();
      return { ...request, headers: { ...request.headers, authorization } };
    };
    const parts = async () => {
      const header = (await signed()).headers.authorization as string;
      const [, credential = '', signedHeaders = '', signature = ''] =
        /^AWS4-HMAC-SHA256 (Credential=[^,]+), (SignedHeaders=[^,]+), (Signature=[0-9a-f]+)$/.exec(
          header,
        ) ?? [];
      return { credential, signedHeaders, signature };
    };

    it.each([
      ['a repeated Authorization header', ['x', 'y'], 'missing Authorization header'],
      [
        'no fields',
        'AWS4-HMAC-SHA256 ',
        'Authorization header lacks Credential, SignedHeaders or Signature',
      ],
      ['a field without a value', 'AWS4-HMAC-SHA256 Credential', 'malformed Authorization header'],
    ])('rejects %s', async (_case, header, reason) => {
      expect(verify(await withAuthorization(header))).toEqual({ ok: false, reason });
    });

    it('rejects repeated, extra or missing Authorization fields', async () => {
      const { credential, signedHeaders, signature } = await parts();
      const reject = async (header: string, reason: string) =>
        expect(verify(await withAuthorization(header))).toEqual({ ok: false, reason });
      await reject(
        `AWS4-HMAC-SHA256 ${credential}, ${credential}, ${signedHeaders}, ${signature}`,
        'malformed Authorization header',
      );
      await reject(
        `AWS4-HMAC-SHA256 ${credential}, ${signedHeaders}, ${signature}, Extra=1`,
        'malformed Authorization header',
      );
      await reject(
        `AWS4-HMAC-SHA256 ${credential}, ${signature}`,
        'Authorization header lacks Credential, SignedHeaders or Signature',
      );
      await reject(
        `AWS4-HMAC-SHA256 Credential=${DEMO_IDENTITY.accessKeyId}/20250601/us-east-1/lambda, ${signedHeaders}, ${signature}`,
        'malformed credential scope',
      );
      await reject(
        `AWS4-HMAC-SHA256 ${credential.replace('aws4_request', 'aws5_request')}, ${signedHeaders}, ${signature}`,
        'credential scope must end in aws4_request',
      );
      await reject(
        `AWS4-HMAC-SHA256 ${credential}, ${signedHeaders}, ${signature.replace(/[0-9a-f]{64}$/, (hex) => hex.toUpperCase())}`,
        'malformed signature',
      );
    });

    it('rejects SignedHeaders that are not lowercase, sorted and unique, or not sent', async () => {
      const { credential, signature } = await parts();
      const reject = async (signedHeaders: string, reason: string) =>
        expect(
          verify(
            await withAuthorization(
              `AWS4-HMAC-SHA256 ${credential}, SignedHeaders=${signedHeaders}, ${signature}`,
            ),
          ),
        ).toEqual({ ok: false, reason });
      await reject('Host;x-amz-date', 'SignedHeaders must be lowercase names');
      await reject('x-amz-date;host', 'SignedHeaders must be sorted and unique');
      await reject('host;host;x-amz-date', 'SignedHeaders must be sorted and unique');
      await reject('host;x-amz-date;x-custom', 'a signed header is missing from the request');
    });

    it.each(['2025-06-01T12:00:00Z', '20250231T120000Z', '20250601T246000Z'])(
      'rejects the X-Amz-Date %s',
      async (date) => {
        const request = await signed();
        request.headers['x-amz-date'] = date;
        expect(verify(request)).toEqual({ ok: false, reason: 'malformed X-Amz-Date header' });
      },
    );

    it('rejects a repeated X-Amz-Content-Sha256 header', async () => {
      const request = await signed();
      const hash = request.headers['x-amz-content-sha256'] as string;
      request.headers['x-amz-content-sha256'] = [hash, hash];
      expect(verify(request)).toEqual({
        ok: false,
        reason: 'repeated X-Amz-Content-Sha256 header',
      });
    });
  });

  describe('query canonicalisation', () => {
    const query = { q: 'a b', c: 'x:y', t: 'a~b', p: '1+2' };

    it('accepts what the SDK sends', async () => {
      const request = await signed({ query });
      expect(request.rawQueryString).toBe('c=x%3Ay&p=1%2B2&q=a%20b&t=a~b');
      expect(verify(request).ok).toBe(true);
    });

    it('decodes what the client sent before re-encoding', async () => {
      for (const raw of [
        'q=a%20b&c=x:y&t=a%7Eb&p=1%2B2', // raw colon, over-encoded tilde, any order
        'p=1%2b2&q=a+b&t=a~b&c=x%3ay', // lower-case hex, + as space
      ]) {
        expect(verify(await signed({ query }, { rawQueryString: raw })).ok, raw).toBe(true);
      }
    });

    it('reads a raw + as a space, so it cannot stand for a plus sign', async () => {
      expect(
        verify(await signed({ query }, { rawQueryString: 'c=x%3Ay&p=1+2&q=a%20b&t=a~b' })).ok,
      ).toBe(false);
    });

    it('sorts repeated parameters by value', async () => {
      const request = await signed(
        { query: { a: ['2', '1'], b: '' } },
        { rawQueryString: 'a=2&b&a=1' },
      );
      expect(verify(request).ok).toBe(true);
    });

    it('rejects malformed percent-encoding', async () => {
      const request = await signed({ query: { a: '%zz' } }, { rawQueryString: 'a=%zz' });
      expect(verify(request)).toEqual({
        ok: false,
        reason: 'malformed percent-encoding in the URL',
      });
    });

    it('percent-encodes everything but RFC 3986 unreserved characters', () => {
      expect(uriEncode("AZaz09-_.~ !'()*/:+")).toBe('AZaz09-_.~%20%21%27%28%29%2A%2F%3A%2B');
      expect(uriEncode('€')).toBe('%E2%82%AC');
    });

    it('parses a raw query into decoded pairs, in order', () => {
      expect(parseQuery('')).toEqual([]);
      expect(parseQuery('b=1&&a&c=x%3Dy+z&b=2')).toEqual([
        ['b', '1'],
        ['a', ''],
        ['c', 'x=y z'],
        ['b', '2'],
      ]);
      expect(() => parseQuery('a=%E2%82')).toThrow();
    });

    it('builds the canonical forms', () => {
      expect(canonicalQueryString('')).toBe('');
      expect(canonicalQueryString('b=2&a=3&a=1&c')).toBe('a=1&a=3&b=2&c=');
      expect(canonicalQueryString('k=%E2%82%AC+%21')).toBe('k=%E2%82%AC%20%21');
      expect(canonicalUri('/token')).toBe('/token');
      expect(canonicalUri('/')).toBe('/');
      expect(canonicalUri('/a%20b/./c/../d/')).toBe('/a%2520b/d/');
    });

    it('double-encodes the path as the SDK does for non-S3 services', async () => {
      const request = await signed({ path: '/a%20b' });
      expect(verify(request).ok).toBe(true);
    });
  });
});
