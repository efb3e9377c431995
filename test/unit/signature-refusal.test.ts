import { describe, expect, it } from 'vitest';
import { DEMO_IDENTITY } from '../../local/local-identities.js';
import { explainRefusal, type SignatureRefusal } from '../../local/signature-refusal.js';
import { type SigV4Request, verifySigV4 } from '../../local/sigv4-verifier.js';
import { type RawSignOptions, signRaw } from '../support/raw-sigv4.js';
import {
  type SignOptions,
  signedAsReceived,
  TEMPORARY_IDENTITY as TEMPORARY,
} from '../support/sigv4.js';

const identities = [DEMO_IDENTITY, TEMPORARY];
const SIGNED_AT = new Date('2025-06-01T12:00:00Z');
const NOW = SIGNED_AT.getTime() + 1_000;
const OPTIONS = { identities, region: 'us-east-1', now: NOW };
const HOST = '127.0.0.1:8787';

/** Signs with the SDK signer; the request as the server sees it. */
const sdkSigned = (options: Partial<SignOptions> = {}): Promise<SigV4Request> =>
  signedAsReceived({ identity: DEMO_IDENTITY, signingDate: SIGNED_AT, port: 8787, ...options });

/** Signs exactly what it is told, as a hand-written client might. */
function rawSigned(options: Partial<RawSignOptions> & { rawQueryString?: string }): SigV4Request {
  const headers = signRaw({
    accessKeyId: DEMO_IDENTITY.accessKeyId,
    secretAccessKey: DEMO_IDENTITY.secretAccessKey,
    host: HOST,
    signingDate: SIGNED_AT,
    ...options,
  });
  return {
    method: 'GET',
    path: '/token',
    rawQueryString: options.rawQueryString ?? '',
    headers,
    body: new Uint8Array(),
  };
}

/** Verifies (expecting a refusal) and explains it. */
function refusal(request: SigV4Request): SignatureRefusal {
  const verdict = verifySigV4(request, OPTIONS);
  if (verdict.ok) throw new Error('expected a refusal');
  return explainRefusal(request, OPTIONS, verdict.reason);
}

/** Nothing in a refusal that the Authorization header, a secret or a token holds. */
function expectNothingSecret(explained: SignatureRefusal, request: SigV4Request): void {
  const text = JSON.stringify(explained);
  const authorization = String(request.headers.authorization ?? '');
  const signature = /Signature=([0-9a-f]+)/.exec(authorization)?.[1];
  for (const identity of identities) expect(text).not.toContain(identity.secretAccessKey);
  expect(text).not.toContain(TEMPORARY.sessionToken);
  if (signature) expect(text).not.toContain(signature);
  if (authorization) expect(text).not.toContain(authorization);
  expect(text).not.toContain('AWS4-HMAC-SHA256 Credential');
}

describe('explainRefusal', () => {
  it('names an unsigned request and how to sign it', async () => {
    const request = await sdkSigned({ query: { scope: 'ba_1' } });
    delete request.headers.authorization;

    const explained = refusal(request);

    expect(explained).toMatchObject({
      check: 'missing_authorization',
      reason: 'missing Authorization header',
      method: 'GET',
      path: '/token',
      queryParameters: ['scope'],
    });
    expect(explained.hint).toContain('service lambda, region us-east-1');
  });

  it('says a presigned query is not taken, naming no query value', async () => {
    const request = await sdkSigned();
    delete request.headers.authorization;
    request.rawQueryString = `X-Amz-Credential=${DEMO_IDENTITY.accessKeyId}&X-Amz-Signature=${'a'.repeat(64)}`;

    const explained = refusal(request);

    expect(explained.hint).toContain('presigned');
    expect(JSON.stringify(explained)).not.toContain('a'.repeat(64));
  });

  it('names an unknown access key id and the ones the URL knows', async () => {
    const stranger = { ...DEMO_IDENTITY, accessKeyId: 'AKIANOBODY0000000000' };
    const request = await sdkSigned({ identity: stranger });

    const explained = refusal(request);

    expect(explained).toMatchObject({
      check: 'unknown_access_key_id',
      accessKeyId: 'AKIANOBODY0000000000',
    });
    expect(explained.hint).toContain(DEMO_IDENTITY.accessKeyId);
    expectNothingSecret(explained, request);
  });

  it('says the key id and secret are swapped, without logging the secret', () => {
    const request = rawSigned({
      accessKeyId: DEMO_IDENTITY.secretAccessKey,
      secretAccessKey: DEMO_IDENTITY.accessKeyId,
    });

    const explained = refusal(request);

    expect(explained.check).toBe('unknown_access_key_id');
    expect(explained.accessKeyId).toBeUndefined();
    expect(explained.hint).toContain('swapped');
    expectNothingSecret(explained, request);
  });

  it.each([
    ['region', { region: 'eu-central-1' }, 'wrong_region', 'eu-central-1', 'us-east-1'],
    ['service', { service: 'execute-api' }, 'wrong_service', 'execute-api', 'lambda'],
  ] as const)(
    'names the wrong %s signed for and the one checked',
    async (_what, sign, check, signed, wanted) => {
      const request = await sdkSigned(sign);

      const explained = refusal(request);

      expect(explained.check).toBe(check);
      expect(explained.hint).toContain(`${_what} ${signed}`);
      expect(explained.hint).toContain(wanted);
      expect(explained.scope).toMatchObject({ date: '20250601', ...sign });
    },
  );

  it.each([
    ['behind', -6 * 60],
    ['ahead of', 6 * 60],
  ])('gives the skew of a date %s the clock', async (_label, seconds) => {
    const request = await sdkSigned({ signingDate: new Date(NOW + seconds * 1000) });

    const explained = refusal(request);

    expect(explained).toMatchObject({ check: 'clock_skew', skewSeconds: seconds });
  });

  it('says the host header must be signed', () => {
    const request = rawSigned({ signedHeaders: ['x-amz-date'] });

    expect(refusal(request)).toMatchObject({
      check: 'host_not_signed',
      signedHeaders: ['x-amz-date'],
    });
  });

  it('names the temporary credentials’ missing session token, never the token', async () => {
    const request = await sdkSigned({ identity: TEMPORARY, sessionToken: TEMPORARY.sessionToken });
    delete request.headers['x-amz-security-token'];

    const explained = refusal(request);

    expect(explained.check).toBe('missing_session_token');
    expect(explained.hint).toContain('X-Amz-Security-Token');
    expectNothingSecret(explained, request);
  });

  describe('a signature that does not match', () => {
    it('points at the secret when the query was in canonical form', async () => {
      const request = await sdkSigned({
        secretAccessKey: 'y'.repeat(40),
        query: { min_ttl: '300', scope: 'ba_1' },
      });

      const explained = refusal(request);

      expect(explained.check).toBe('signature_mismatch');
      expect(explained.hint).toContain('wrong secret');
      expectNothingSecret(explained, request);
    });

    it('says the client signed the query as sent, unsorted, and the order to send', () => {
      const request = rawSigned({ rawQueryString: 'scope=ba_1&min_ttl=300' });

      const explained = refusal(request);

      expect(explained.check).toBe('signature_mismatch');
      expect(explained.hint).toContain('signed the query exactly as sent');
      expect(explained.hint).toContain('min_ttl, scope');
      expect(explained.queryParameters).toEqual(['scope', 'min_ttl']);
      expectNothingSecret(explained, request);
    });

    it('says the client signed the query unencoded', () => {
      const request = rawSigned({ rawQueryString: 'scope=a:b' });

      expect(refusal(request).hint).toContain('signed the query exactly as sent');
    });

    it('says the client sorted the query but did not encode it', () => {
      const request = rawSigned({
        rawQueryString: 'scope=a:b&min_ttl=300',
        canonicalQuery: 'min_ttl=300&scope=a:b',
      });

      expect(refusal(request).hint).toContain('did not percent-encode it');
    });

    it('says neither form matched when the query was not canonical and the secret was wrong', () => {
      const request = rawSigned({
        rawQueryString: 'scope=ba_1&min_ttl=300',
        secretAccessKey: 'z'.repeat(40),
      });

      expect(refusal(request).hint).toContain('matches no other form');
    });
  });
});
