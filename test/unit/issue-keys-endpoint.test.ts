import { describe, expect, it } from 'vitest';
import { KeysEndpointError } from '../../functions/issue-keys/errors.js';
import {
  keysUrl,
  MAX_KEYS_RESPONSE_BYTES,
  readKeysResponse,
  sendKeysRequest,
} from '../../functions/issue-keys/keys-endpoint.js';
import { startRedirectingServer } from '../support/redirecting-server.js';

const NOW = Date.UTC(2030, 0, 1);

async function refusal(response: Response): Promise<KeysEndpointError> {
  const error = await readKeysResponse(response, NOW).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(KeysEndpointError);
  return error as KeysEndpointError;
}

describe('sendKeysRequest', () => {
  it('POSTs with Bearer, Idempotency-Key, Accept, no body, redirects not followed', async () => {
    // Prepare
    const calls: Array<[string, RequestInit]> = [];
    const fetchImpl = (async (input: string, init: RequestInit) => {
      calls.push([input, init]);
      return new Response('{}', { status: 201 });
    }) as typeof fetch;
    const signal = AbortSignal.timeout(1000);

    // Act
    await sendKeysRequest(
      fetchImpl,
      {
        baseUrl: 'https://api.provider.example/',
        businessApplicationId: 'ba:1',
        accessToken: 'tok',
        idempotencyKey: 'idem',
      },
      signal,
    );

    // Assess
    expect(calls).toEqual([
      [
        'https://api.provider.example/partner/v1/basic_auth/business_applications/ba%3A1/keys',
        {
          method: 'POST',
          headers: {
            authorization: 'Bearer tok',
            'idempotency-key': 'idem',
            accept: 'application/json',
          },
          signal,
          redirect: 'manual',
        },
      ],
    ]);
  });

  it('sends a configured JSON body as application/json', async () => {
    // Prepare
    let seen: RequestInit | undefined;
    const fetchImpl = (async (_: string, init: RequestInit) => {
      seen = init;
      return new Response('{}');
    }) as typeof fetch;

    // Act
    await sendKeysRequest(
      fetchImpl,
      {
        baseUrl: 'https://p',
        businessApplicationId: 'b',
        accessToken: 't',
        idempotencyKey: 'k',
        body: '{"a":1}',
      },
      AbortSignal.timeout(1000),
    );

    // Assess
    expect(seen?.body).toBe('{"a":1}');
    expect(seen?.headers).toMatchObject({ 'content-type': 'application/json' });
  });

  it.each([302, 307])(
    'regression: a real %i is upstream_error, not retried as unreachable, and the token does not follow it',
    async (status) => {
      // Prepare
      const redirecting = await startRedirectingServer(status);
      try {
        // Act
        const error = await sendKeysRequest(
          fetch,
          {
            baseUrl: redirecting.url,
            businessApplicationId: 'ba_1',
            accessToken: 'tok',
            idempotencyKey: 'idem',
          },
          AbortSignal.timeout(5000),
        )
          .then((response) => readKeysResponse(response, NOW))
          .catch((e: unknown) => e);

        // Assess
        expect(error).toBeInstanceOf(KeysEndpointError);
        expect(error).toMatchObject({ code: 'upstream_error', status, retryable: false });
        expect(redirecting.answered()).toBe(1);
        expect(redirecting.followed).toEqual([]);
      } finally {
        await redirecting.close();
      }
    },
  );

  it('keeps a base path', () => {
    expect(keysUrl('https://p.example/api', 'ba_1')).toBe(
      'https://p.example/api/partner/v1/basic_auth/business_applications/ba_1/keys',
    );
  });
});

describe('readKeysResponse', () => {
  it.each([200, 201, 202])(
    'any 2xx (%i) is success, the body kept byte for byte',
    async (status) => {
      // Prepare
      const raw = Uint8Array.of(0x7b, 0x7d, 0x0a, 0xff);

      // Act
      const issued = await readKeysResponse(new Response(raw, { status }), NOW);

      // Assess
      expect(issued).toEqual({ status, body: raw });
    },
  );

  it('a 2xx without a body is upstream_error (nothing to store)', async () => {
    const error = await refusal(new Response(null, { status: 204 }));
    expect(error).toMatchObject({ code: 'upstream_error', status: 204, retryable: false });
  });

  it('a 2xx body over the Secrets Manager limit is upstream_error', async () => {
    const error = await refusal(new Response(new Uint8Array(MAX_KEYS_RESPONSE_BYTES + 1)));
    expect(error.code).toBe('upstream_error');
  });

  it.each([
    [401, 'token_rejected', false, false],
    [403, 'feature_not_enabled', false, true],
    [404, 'business_application_not_found', false, true],
    [400, 'upstream_error', false, true],
    [409, 'upstream_error', false, false],
    [422, 'upstream_error', false, true],
    [429, 'upstream_unavailable', true, false],
    [500, 'upstream_unavailable', true, false],
    [503, 'upstream_unavailable', true, false],
    [302, 'upstream_error', false, false],
    [300, 'upstream_error', false, false],
  ] as const)(
    '%i is %s (retryable %s, definitive %s)',
    async (status, code, retryable, definitive) => {
      const error = await refusal(
        new Response('{"error":"x","secret":"never read"}', {
          status,
          headers: { 'retry-after': '7' },
        }),
      );
      expect(error).toMatchObject({ code, status, retryable });
      expect(error.definitive).toBe(definitive);
      expect(error.message).not.toContain('never read');
      if (retryable) expect(error.retryAfter).toBe(7);
    },
  );

  it('reads an HTTP-date Retry-After', async () => {
    const date = new Date(NOW + 30_000).toUTCString();
    const error = await refusal(
      new Response(null, { status: 503, headers: { 'retry-after': date } }),
    );
    expect(error.retryAfter).toBe(30);
  });
});
