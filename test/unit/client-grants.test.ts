/**
 * TokenVendingClient.getGrants: `GET /grants`, signed like a token request,
 * never cached, retried on 503 and 429 like one; its answer checked.
 */
import { describe, expect, it } from 'vitest';
import { type FetchFunction, TokenVendingClient } from '../../client/index.js';

const URL_EU = 'https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws';
const CREDENTIALS = {
  accessKeyId: 'AKIAUNITTEST00000001',
  secretAccessKey: 'unitTestSecretAccessKey00000000000000000',
};
const GRANTS = {
  principal: 'arn:aws:sts::111122223333:assumed-role/checkout/s',
  scopes: ['ba_1', 'ba_2'],
  unscoped: false,
  policy_version: '7',
};

function scripted(...answers: Response[]) {
  const sent: string[] = [];
  const fetch: FetchFunction = async (url, init) => {
    sent.push(`${url} ${new Headers(init.headers).has('authorization') ? 'signed' : 'unsigned'}`);
    const next = answers.shift();
    if (!next) throw new Error(`unexpected request ${sent.length}`);
    return next;
  };
  const clock = { now: () => Date.UTC(2030, 0, 1), sleep: async () => undefined };
  return {
    sent,
    client: new TokenVendingClient({ url: URL_EU, credentials: CREDENTIALS, fetch, clock }),
  };
}

const problem = (status: number, code: string) =>
  new Response(JSON.stringify({ status, code, title: `title of ${code}` }), {
    status,
    headers: { 'content-type': 'application/problem+json', 'retry-after': '1' },
  });

describe('getGrants', () => {
  it('asks GET /grants, signed, and answers in camelCase', async () => {
    const { client, sent } = scripted(Response.json(GRANTS));

    const grants = await client.getGrants();

    expect(sent).toEqual([`${URL_EU}/grants signed`]);
    expect(grants).toEqual({
      principal: GRANTS.principal,
      scopes: ['ba_1', 'ba_2'],
      unscoped: false,
      policyVersion: '7',
    });
  });

  it('asks again on every call: grants change with the access policy', async () => {
    const { client, sent } = scripted(Response.json(GRANTS), Response.json(GRANTS));

    await client.getGrants();
    await client.getGrants();

    expect(sent).toHaveLength(2);
  });

  it('retries a 503 as a token request is retried', async () => {
    const { client, sent } = scripted(problem(503, 'upstream_unavailable'), Response.json(GRANTS));

    await expect(client.getGrants()).resolves.toMatchObject({ principal: GRANTS.principal });
    expect(sent).toHaveLength(2);
  });

  it("throws the problem's code", async () => {
    const { client } = scripted(problem(401, 'unauthenticated'));

    await expect(client.getGrants()).rejects.toMatchObject({
      code: 'unauthenticated',
      status: 401,
    });
  });

  it.each([
    ['not JSON', 'nope'],
    ['scopes not strings', JSON.stringify({ ...GRANTS, scopes: [1] })],
    ['no principal', JSON.stringify({ scopes: [], unscoped: false })],
  ])('is invalid_response for an answer that is %s', async (_label, body) => {
    const { client } = scripted(new Response(body, { status: 200 }));

    await expect(client.getGrants()).rejects.toMatchObject({ code: 'invalid_response' });
  });
});
