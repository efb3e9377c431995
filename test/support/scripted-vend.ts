/**
 * A scripted vend URL for the agent's tests: a fetch that mints tok_1, tok_2,
 * ... for the scope asked (or answers as `answer` says) and records each
 * request's query. Time is `clock`, which tests move.
 */
import type { FetchFunction } from '../../client/index.js';

export const NOW = Date.UTC(2030, 0, 1);
export const URL_EU = 'https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws';
export const CREDENTIALS = {
  accessKeyId: 'AKIAUNITTEST00000001',
  secretAccessKey: 'unitTestSecretAccessKey00000000000000000',
};
export const AGENT_TOKEN = 'agent-token-for-unit-tests-0123456789';

export const clock = {
  ms: NOW,
  now: () => clock.ms,
  sleep: async () => undefined,
};

export function vendUrl(answer?: (query: URLSearchParams) => Response | undefined) {
  const queries: URLSearchParams[] = [];
  let minted = 0;
  const fetch: FetchFunction = async (url) => {
    const query = new URL(url).searchParams;
    queries.push(query);
    const scripted = answer?.(query);
    if (scripted) return scripted;
    minted += 1;
    const scope = query.get('scope');
    return Response.json({
      access_token: `tok_${minted}_secret`,
      token_type: 'Bearer',
      expires_in: 7200,
      expires_at: Math.floor(clock.ms / 1000) + 7200,
      ...(scope ? { scope } : {}),
    });
  };
  return { fetch, queries };
}
