/**
 * The client keeps its own copy of the vend API's vocabulary (it is installed
 * without `functions/` and `local/`): these tests check that the copy and the
 * vend function agree. The `expectTypeOf` checks are enforced by the type-check
 * (`npm run typecheck`), the others at run time.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { TokenVendingClient, TokenVendingError } from '../../client/index.js';
import { PROJECT_PACKAGE_NAME } from '../../client/project-script.js';
import { parseRetryAfter } from '../../client/retry-after.js';
import type { LocalStackFile } from '../../client/stack-file.js';
import {
  ACCESS_TOKEN_PATTERN as CLIENT_ACCESS_TOKEN_PATTERN,
  MAX_ACCESS_TOKEN_LENGTH as CLIENT_MAX_ACCESS_TOKEN_LENGTH,
  MAX_MIN_TTL as CLIENT_MAX_MIN_TTL,
  SCOPE_PATTERN as CLIENT_SCOPE_PATTERN,
  type ProblemCode as ClientProblemCode,
  minTtlValue,
  PROBLEM_CODES,
} from '../../client/vend-api.js';
import { SCOPE_PATTERN } from '../../functions/core/access-policy.js';
import type { ProblemCode } from '../../functions/core/errors.js';
import * as vendErrors from '../../functions/core/errors.js';
import { problemResponse } from '../../functions/core/problem.js';
import { B64TOKEN, MAX_ACCESS_TOKEN_LENGTH } from '../../functions/core/provider-client.js';
import { retryAfterSecondsOf } from '../../functions/core/retry-after.js';
import { MAX_MIN_TTL, parseVendRequest } from '../../functions/core/vend-request.js';
import type { StackInfo } from '../../local/stack.js';

/** One instance of every VendError subclass the vend function defines. */
function everyVendError(): vendErrors.VendError[] {
  return (Object.values(vendErrors) as unknown[])
    .filter(
      (value): value is new (detail: string) => vendErrors.VendError =>
        typeof value === 'function' &&
        value !== vendErrors.VendError &&
        value.prototype instanceof vendErrors.VendError,
    )
    .map((ErrorClass) => new ErrorClass('detail'));
}

describe('problem codes', () => {
  it('are the same union on both sides', () => {
    expectTypeOf<ClientProblemCode>().toEqualTypeOf<ProblemCode>();
    expectTypeOf<ProblemCode>().toEqualTypeOf<ClientProblemCode>();
  });

  it('list every code a VendError of the vend function carries, and no other', () => {
    const errors = everyVendError();

    expect(errors.length).toBeGreaterThanOrEqual(9);
    expect([...new Set(errors.map((e) => e.code))].sort()).toEqual([...PROBLEM_CODES].sort());
  });

  it.each(everyVendError().map((error) => [error.code, error] as const))(
    'a %s problem answer reaches the caller as that code',
    async (code, error) => {
      const answer = problemResponse(error);
      if (typeof answer === 'string' || !('statusCode' in answer)) throw new Error('no status');
      const client = new TokenVendingClient({
        url: 'http://127.0.0.1:8787',
        credentials: { accessKeyId: 'AKIAUNITTEST00000001', secretAccessKey: 'secret' },
        maxRetries: 0,
        fetch: async () =>
          new Response(answer.body ?? '', {
            status: answer.statusCode ?? 200,
            headers: answer.headers as Record<string, string>,
          }),
      });

      const caught = await client.getToken().catch((e: unknown) => e);

      expect(caught).toBeInstanceOf(TokenVendingError);
      expect(caught).toMatchObject({ code, status: error.status, title: error.title });
    },
  );
});

describe('request syntax', () => {
  it('has the scope pattern of the access policy', () => {
    expect(CLIENT_SCOPE_PATTERN.source).toBe(SCOPE_PATTERN.source);
    expect(CLIENT_SCOPE_PATTERN.flags).toBe(SCOPE_PATTERN.flags);
  });

  it('has the largest min_ttl of the vend request', () => {
    expect(CLIENT_MAX_MIN_TTL).toBe(MAX_MIN_TTL);
  });

  it.each([
    '0',
    '300',
    '3600',
    '3601',
    '0300',
    '00300',
    `${'0'.repeat(30)}3600`,
    `${'0'.repeat(30)}3601`,
    '',
    '-1',
    '1.5',
    '1e3',
    ' 5',
    '+5',
    '0x10',
    '\u0967',
  ])('reads min_ttl=%j as the vend function does', (text) => {
    let vend: number | undefined;
    try {
      vend = parseVendRequest(new URLSearchParams({ min_ttl: text }).toString()).minTtl;
    } catch {
      vend = undefined;
    }

    expect(minTtlValue(text)).toBe(vend);
  });
});

describe('the project', () => {
  it("is the package the client's project scripts run in (tvm admin, tvm policy)", () => {
    const root = JSON.parse(
      readFileSync(resolve(import.meta.dirname, '../../package.json'), 'utf8'),
    ) as { name: string };

    expect(PROJECT_PACKAGE_NAME).toBe(root.name);
  });
});

describe('Retry-After', () => {
  const nowMs = Date.UTC(2030, 0, 1);
  it.each([
    '7',
    ' 7 ',
    '0',
    '-5',
    '1.5',
    '+3',
    '2030',
    'soon',
    '',
    new Date(nowMs + 2000).toUTCString(),
    new Date(nowMs - 60_000).toUTCString(),
  ])('reads %j as the vend and key-issuing functions do', (value) => {
    expect(parseRetryAfter(value, nowMs)).toBe(retryAfterSecondsOf(value, nowMs));
  });
});

describe('the stack file', () => {
  it('holds, as the local stack writes it, what the client reads', () => {
    // What `npm start` writes must satisfy the client's own copy of the shape;
    // test/integration/local-stack.test.ts reads a written file back.
    expectTypeOf<StackInfo>().toExtend<LocalStackFile>();
    expectTypeOf<StackInfo['identity']>().toEqualTypeOf<LocalStackFile['identity']>();
  });
});

describe('access tokens', () => {
  it('are refused by the client exactly where the vend function refuses them from the provider', () => {
    expect(CLIENT_ACCESS_TOKEN_PATTERN.source).toBe(B64TOKEN.source);
    expect(CLIENT_MAX_ACCESS_TOKEN_LENGTH).toBe(MAX_ACCESS_TOKEN_LENGTH);
  });
});
