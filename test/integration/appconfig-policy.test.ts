/**
 * Reading the access policy from AWS AppConfig through Powertools Parameters'
 * provider, against a stand-in of the AppConfig Data API on loopback that
 * checks SigV4 as the service does: with the SDK's own client (tests, the
 * local stack) and with the small client the Lambda bundles carry in its place
 * (functions/bundle-aliases/appconfigdata-client.ts).
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { AppConfigDataClient as SdkClient } from '@aws-sdk/client-appconfigdata';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appConfigDocumentFetcher } from '../../functions/adapters/appconfig-policy.js';
import { policyProviderFor } from '../../functions/adapters/policy-provider.js';
import { AppConfigDataClient as LambdaClient } from '../../functions/bundle-aliases/appconfigdata-client.js';
import { EnvReader } from '../../functions/core/config.js';
import { documentDigest, type PolicyMetric } from '../../functions/core/policy-source.js';
import { type AppConfigDataFake, startAppConfigDataFake } from '../support/appconfig-data-fake.js';
import { TestClock } from '../support/clock.js';

const V1 = JSON.stringify({
  scopes: ['ba_1'],
  grants: [{ principal: 'arn:aws:iam::111122223333:role/checkout', scopes: ['ba_1'] }],
  keyIssuing: { businessApplicationIds: ['ba_1'] },
});
const V2 = JSON.stringify({ scopes: ['ba_1', 'ba_2'], grants: [] });
const KEY_ISSUER = 'arn:aws:iam::123456789012:role/TokenVending-issue-keys';
const CREDENTIALS = {
  accessKeyId: 'AKIDAPPCONFIGTEST001',
  secretAccessKey: 'appconfig-test-secret',
};

/** The functions' clock, and AppConfig's: tests move it as time passes. */
const clock = new TestClock({ frozenAt: 1_800_000_000_000 });
/** Each request to AppConfig takes this long (s) before the service handles it. */
let latencySeconds = 0;
let fake: AppConfigDataFake;
beforeAll(async () => {
  fake = await startAppConfigDataFake({
    identities: [CREDENTIALS],
    region: 'us-east-1',
    now: () => {
      clock.advance(latencySeconds);
      return clock.now();
    },
  });
});
afterAll(async () => {
  await fake.close();
});

const location = { application: 'tv', environment: 'example', profile: 'access-policy' };
const polling = { intervalSeconds: 15, now: () => clock.now() };
const clients = {
  "the SDK's client": () =>
    new SdkClient({
      endpoint: fake.url,
      region: 'us-east-1',
      credentials: CREDENTIALS,
      maxAttempts: 1,
    }),
  "the Lambda bundles' client": () => {
    // It takes credentials as Lambda provides them: from the environment.
    Object.assign(process.env, {
      AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
    });
    delete process.env.AWS_SESSION_TOKEN;
    return new LambdaClient({ endpoint: fake.url, region: 'us-east-1' }) as unknown as SdkClient;
  },
};

describe.each(Object.entries(clients))(
  'the AppConfig document fetcher, with %s',
  (_name, client) => {
    it('reads the deployed document with its version label, and the same while AppConfig answers "unchanged"', async () => {
      fake.deploy(V1, 'onboard-ba_1');
      const fetch = appConfigDocumentFetcher(client(), location, polling);
      const refused = fake.stats.refusedSignatures;

      const first = await fetch();
      const polls = fake.stats.polls;
      clock.advance(15);
      const unchanged = await fetch();
      fake.deploy(V2);
      clock.advance(15);
      const second = await fetch();

      expect(first).toEqual({ text: V1, version: 'onboard-ba_1' });
      // AppConfig answers an empty body (and no label) for "no change"; the
      // provider keeps the document, the fetcher its label.
      expect(unchanged).toEqual({ text: V1, version: 'onboard-ba_1' });
      expect(fake.stats.polls).toBe(polls + 2);
      // A version deployed without a label has none.
      expect(second).toEqual({ text: V2 });
      // Every request carried a signature the stand-in accepted.
      expect(fake.stats.refusedSignatures).toBe(refused);
      // The session asked AppConfig to allow a poll every 15 s.
      expect(fake.stats.requestedIntervals.at(-1)).toBe(15);
    });

    it('fails a fetch AppConfig answers with an error, naming it as the service does', async () => {
      fake.deploy(V1);
      const fetch = appConfigDocumentFetcher(client(), location, polling);
      await fetch();
      fake.fail(1);
      clock.advance(15);

      await expect(fetch()).rejects.toMatchObject({
        name: expect.stringMatching(/InternalServer|Error/),
      });
      expect(await fetch()).toEqual({ text: V1 });
    });
  },
);

/** The policy provider as a function builds it from its environment, over the stand-in. */
function functionsReading(maxAgeSeconds: string) {
  const env = new EnvReader({
    POLICY_APPCONFIG_APPLICATION: 'tv',
    POLICY_APPCONFIG_ENVIRONMENT: 'example',
    POLICY_APPCONFIG_PROFILE: 'access-policy',
    POLICY_MAX_AGE_SECONDS: maxAgeSeconds,
    KEY_ISSUER_ARN: KEY_ISSUER,
  });
  const settings = env.policySettings();
  env.done();
  const counted: PolicyMetric[] = [];
  const provider = policyProviderFor(settings as NonNullable<typeof settings>, {
    logger: new Logger({ serviceName: 'test', logLevel: 'SILENT' }),
    count: (metric) => counted.push(metric),
    clock,
    client: clients["the SDK's client"](),
  });
  return { provider, counted };
}

describe('the functions reading POLICY_APPCONFIG_*', () => {
  it('load the policy with the key issuer granted, refetch after the max age, and keep it through an outage', async () => {
    fake.deploy(V1);
    const { provider, counted } = functionsReading('30');

    const loaded = await provider.current();
    fake.fail(1);
    clock.advance(30);
    const duringOutage = await provider.current();
    fake.deploy(V2);
    clock.advance(30);
    const after = await provider.current();

    expect(loaded.version).toBe(documentDigest(V1));
    expect(
      loaded.policy.allows(
        'arn:aws:sts::123456789012:assumed-role/TokenVending-issue-keys/x',
        undefined,
      ),
    ).toBe(true);
    expect(loaded.policy.keyIssuingIds).toEqual(['ba_1']);
    expect(duringOutage.version).toBe(documentDigest(V1));
    expect(counted).toEqual(['PolicyFetchFailures']);
    expect(after.version).toBe(documentDigest(V2));
    expect([...after.policy.scopes]).toEqual(['ba_1', 'ba_2']);
    // The key issuer's grant is in every version, whatever the document says.
    expect(after.policy.allows(KEY_ISSUER, undefined)).toBe(true);
  });

  it('reload every 15 s under a vend a second, AppConfig slow to answer: no poll refused, a new version in force within the max age of the last answer', async () => {
    // Prepare: every AppConfig call takes 1 s, so a session's first answer
    // comes 2 s after the first ask (StartConfigurationSession, then a poll).
    fake.deploy(V1);
    latencySeconds = 1;
    const { provider, counted } = functionsReading('15');
    const before = { ...fake.stats };
    const seen: Array<{ at: number; version: string }> = [];
    const vendSecond = async () => {
      seen.push({ at: clock.now(), version: (await provider.current()).version });
      clock.advance(1);
    };

    // Act: two minutes of vends; a new version is deployed after the first.
    try {
      await vendSecond();
      fake.deploy(V2);
      const deployedAt = clock.now();
      for (let second = 1; second < 120; second += 1) await vendSecond();

      // Assess
      expect(counted).toEqual([]);
      expect(fake.stats.tooEarly - before.tooEarly).toBe(0);
      expect(fake.stats.requestedIntervals.at(-1)).toBe(15);
      // A poll every 15 s after the last answer (and its second of latency): 7 or 8 in 2 minutes.
      expect(fake.stats.polls - before.polls).toBeGreaterThanOrEqual(7);
      const firstV2 = seen.find((s) => s.version === documentDigest(V2));
      // In force within the max age of the first answer, plus that answer's 2 s and the poll's 1 s.
      expect((firstV2?.at ?? Number.POSITIVE_INFINITY) - deployedAt).toBeLessThanOrEqual(18_000);
    } finally {
      latencySeconds = 0;
    }
  });

  it('poll no sooner than AppConfig asks when it asks for a longer wait, keeping the document meanwhile', async () => {
    fake.deploy(V1);
    const { provider, counted } = functionsReading('15');
    fake.answerInterval(100);
    const before = { ...fake.stats };

    try {
      for (let second = 0; second < 120; second += 15) {
        expect((await provider.current()).version).toBe(documentDigest(V1));
        clock.advance(15);
      }
    } finally {
      fake.answerInterval(undefined);
    }

    expect(counted).toEqual([]);
    expect(fake.stats.tooEarly).toBe(before.tooEarly);
    // At 0 s, and at 105 s (the first ask at least 100 s after the answer).
    expect(fake.stats.polls - before.polls).toBe(2);
  });

  it('refuses a partial AppConfig location at start, naming what is missing', () => {
    const env = new EnvReader({ POLICY_APPCONFIG_APPLICATION: 'tv' });
    env.policySettings();

    expect(() => env.done()).toThrow(
      /POLICY_APPCONFIG_ENVIRONMENT is required with the other POLICY_APPCONFIG_ variables.*POLICY_APPCONFIG_PROFILE is required/,
    );
  });
});
