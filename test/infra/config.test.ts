import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import {
  StageConfigError,
  type StageInput,
  selectStage,
  validateStage,
} from '../../infra/config.js';
import { example } from '../../infra/stages/example.js';
import { DEFAULT_STAGE, stages } from '../../infra/stages/index.js';
import { CDK_JSON_CONTEXT } from '../support/infra.js';

/** The problems a configuration is rejected with (and that it is rejected at all). */
function problemsOf(input: unknown): readonly string[] {
  try {
    validateStage(input, '"test"');
  } catch (error) {
    expect(error).toBeInstanceOf(StageConfigError);
    return (error as StageConfigError).problems;
  }
  throw new Error('the configuration was accepted');
}

const withChanges = (changes: Record<string, unknown>): unknown => ({ ...example, ...changes });

describe('validateStage', () => {
  it('accepts the example stage and fills in the defaults', () => {
    const { accessPolicy, unscopedScopeMode, logRetentionDays, ...rest } = example;
    const config = validateStage({ ...rest, accessPolicy });

    expect(config.unscopedScopeMode).toBe('omit');
    expect(config.logRetentionDays).toBe(365);
    expect(config.terminationProtection).toBe(true);
    expect(config.policy.principals).toEqual([
      'arn:aws:iam::111122223333:role/checkout',
      'arn:aws:iam::111122223333:role/support',
    ]);
    expect(config.keyIssuing).toEqual({
      businessApplicationIds: ['ba_123'],
      schedule: 'cron(0 3 * * ? *)',
      readers: [],
    });
  });

  it('tells a complete secret ARN from a secret name', () => {
    const arn =
      'arn:aws:secretsmanager:eu-west-1:111122223333:secret:token-vending/prod/provider-AbC123';

    expect(validateStage(withChanges({ credentialsSecret: arn })).credentialsSecret).toEqual({
      kind: 'arn',
      arn,
    });
    expect(
      validateStage(withChanges({ credentialsSecret: 'token-vending/prod/provider' }))
        .credentialsSecret,
    ).toEqual({ kind: 'name', name: 'token-vending/prod/provider' });
  });

  it.each([
    ['a name', 'token-vending/example/basic-auth/provider'],
    [
      'an ARN',
      'arn:aws:secretsmanager:eu-west-1:111122223333:secret:token-vending/example/basic-auth/provider-AbC123',
    ],
  ])(
    'regression: refuses a credentials secret (%s) under the key-issuing prefix, which the job may overwrite',
    (_label, credentialsSecret) => {
      expect(problemsOf(withChanges({ credentialsSecret }))).toEqual([
        'credentialsSecret must not be under token-vending/example/basic-auth/, where the key-issuing job writes (and may overwrite) secrets',
      ]);
    },
  );

  it('keeps a key-issuing request body as JSON text', () => {
    const config = validateStage(
      withChanges({
        keyIssuing: { ...example.keyIssuing, requestBody: { label: 'issued by token vending' } },
      }),
    );

    expect(config.keyIssuing.requestBody).toBe('{"label":"issued by token vending"}');
  });

  it('reports every problem of a bad configuration at once, naming each field', () => {
    const problems = problemsOf({
      stage: 'Prod_1',
      account: '1234',
      region: 'Ireland',
      providerBaseUrl: 'http://api.provider.example',
      credentialsSecret: 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:provider',
      accessPolicy: { scopes: ['ba_1'], grants: [{ principal: 'checkout', scopes: ['ba_2'] }] },
      keyIssuing: { businessApplicationIds: ['ba 1', 'ba_2', 'ba_2'], schedule: 'daily' },
      unscopedScopeMode: 'none',
      alarmEmail: 'oncall',
      secretsPrefix: '/token-vending/',
      reservedConcurrency: { vend: 0, lambda: 1 },
      callerAccounts: ['1234', '444455556666', '444455556666'],
      organizationId: 'org-1',
      deploymentRoleArn: 'cdk-deploy',
      keyAdministratorArns: ['arn:aws:iam::111122223333:user/alice'],
      logRetentionDays: 42,
      terminationProtection: 'yes',
      colour: 'blue',
    });

    expect(problems).toEqual([
      'unknown field "colour"',
      'stage must match ^[a-z][a-z0-9-]{0,19}$ (it names the stack and functions)',
      'account must be a 12-digit AWS account id',
      'region must be an AWS region name such as eu-west-1',
      'providerBaseUrl must be an https: URL (the key, secret and tokens go there)',
      'credentialsSecret must be the complete secret ARN (ending in "-" and the six characters Secrets Manager adds) or the secret name',
      expect.stringMatching(
        /^accessPolicy is invalid: grants\.0\.principal: must be an IAM role ARN.*grants\.0\.scopes: "ba_2" is not listed in scopes$/,
      ),
      'keyIssuing.businessApplicationIds[0] must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$',
      'keyIssuing.businessApplicationIds[2] repeats "ba_2"',
      expect.stringMatching(/^keyIssuing\.schedule must be an EventBridge Scheduler expression/),
      'unscopedScopeMode must be omit or empty',
      'alarmEmail must be an e-mail address',
      expect.stringMatching(/^secretsPrefix: the secrets prefix must be 1\.\.256 of/),
      'reservedConcurrency: unknown field "lambda"',
      'reservedConcurrency.vend must be an integer from 1 to 1000',
      'callerAccounts[0] must be a 12-digit AWS account id',
      'callerAccounts[2] repeats 444455556666',
      'organizationId must be an AWS Organizations id such as o-a1b2c3d4e5',
      'deploymentRoleArn must be an IAM role ARN',
      'keyAdministratorArns[0] must be an IAM role ARN',
      expect.stringMatching(/^logRetentionDays must be one of 1, 3, 5, /),
      'terminationProtection must be true or false',
    ]);
  });

  it('names what is wrong with the policy editors: not a role, another account than the pinned one, too many', () => {
    const editor = (i: number) => `arn:aws:iam::111122223333:role/editor-${i}`;

    expect(
      problemsOf(
        withChanges({
          account: '111122223333',
          policyEditorArns: [
            'arn:aws:iam::111122223333:user/alice',
            'arn:aws:iam::444455556666:role/ops',
          ],
        }),
      ),
    ).toEqual([
      'policyEditorArns[0] must be an IAM role ARN',
      "policyEditorArns[1] is a role of account 444455556666, not of the stack's account 111122223333",
    ]);
    expect(problemsOf(withChanges({ policyEditorArns: 'ops' }))).toEqual([
      'policyEditorArns must be an array of role ARNs',
    ]);
    expect(
      problemsOf(
        withChanges({ policyEditorArns: Array.from({ length: 11 }, (_, i) => editor(i)) }),
      ),
    ).toEqual([
      'policyEditorArns lists 11 roles; at most 10 fit in the service control policy (give them one role to assume)',
    ]);
    expect(
      validateStage(withChanges({ policyEditorArns: [editor(1)] })).access.policyEditorArns,
    ).toEqual([editor(1)]);
  });

  it('regression: refuses an empty callerAccounts without an organization, which admitted no caller and skipped the grant check', () => {
    expect(problemsOf(withChanges({ callerAccounts: [] }))).toEqual([
      'callerAccounts is empty and no organizationId is given: the URL would admit no caller (leave it out to admit the stack account)',
    ]);
    expect(
      validateStage(withChanges({ callerAccounts: [], organizationId: 'o-a1b2c3d4e5' })).access
        .organizationId,
    ).toBe('o-a1b2c3d4e5');
  });

  it('puts every problem in the error message, one per line', () => {
    expect(() =>
      validateStage(withChanges({ providerBaseUrl: 'ftp://x', secretsPrefix: '' }), '"prod"'),
    ).toThrow(
      'Invalid stage configuration "prod":\n  - providerBaseUrl must be an https: URL (the key, secret and tokens go there)\n  - secretsPrefix is required',
    );
  });

  it('names each missing required field', () => {
    expect(problemsOf({})).toEqual([
      'stage is required',
      'providerBaseUrl is required',
      'credentialsSecret is required',
      'accessPolicy is required',
      'keyIssuing is required ({ businessApplicationIds, schedule })',
      'secretsPrefix is required',
    ]);
  });

  it('rejects fields of the wrong type without echoing their values', () => {
    expect(
      problemsOf(
        withChanges({
          stage: 7,
          providerBaseUrl: ['https://x'],
          keyIssuing: { businessApplicationIds: 'ba_1', schedule: 'rate(1 day)', when: 'now' },
        }),
      ),
    ).toEqual([
      'stage must be a string',
      'providerBaseUrl must be a string',
      'keyIssuing: unknown field "when"',
      'keyIssuing.businessApplicationIds must be an array of ids (may be empty)',
    ]);
  });

  it('defaults to no reserved concurrency and to admitting the stack own account', () => {
    const { callerAccounts: _, ...rest } = example;
    const config = validateStage(rest);

    expect(config.reservedConcurrency).toEqual({});
    expect(config.access).toEqual({
      callerAccounts: 'own-account',
      keyAdministratorArns: [],
      policyEditorArns: [],
    });
  });

  it('takes caller accounts, an organization, a deployment role and key administrators', () => {
    const config = validateStage(
      withChanges({
        callerAccounts: ['111122223333', '444455556666'],
        organizationId: 'o-a1b2c3d4e5',
        deploymentRoleArn: 'arn:aws:iam::999988887777:role/deploy/token-vending',
        keyAdministratorArns: ['arn:aws:iam::999988887777:role/key-admins'],
        reservedConcurrency: { vend: 50, refresh: 2, issueKeys: 1 },
      }),
    );

    expect(config.access).toEqual({
      callerAccounts: ['111122223333', '444455556666'],
      organizationId: 'o-a1b2c3d4e5',
      deploymentRoleArn: 'arn:aws:iam::999988887777:role/deploy/token-vending',
      keyAdministratorArns: ['arn:aws:iam::999988887777:role/key-admins'],
      policyEditorArns: [],
    });
    expect(config.reservedConcurrency).toEqual({ vend: 50, refresh: 2, issueKeys: 1 });
    expect(
      validateStage(withChanges({ callerAccounts: undefined, organizationId: 'o-a1b2c3d4e5' }))
        .access.callerAccounts,
    ).toEqual([]);
  });

  it('refuses a grant whose account the URL would not admit', () => {
    expect(
      problemsOf(
        withChanges({
          callerAccounts: ['444455556666'],
          accessPolicy: {
            scopes: ['ba_1'],
            grants: [
              { principal: 'arn:aws:iam::444455556666:role/checkout', scopes: ['ba_1'] },
              { principal: 'arn:aws:iam::111122223333:role/support', scopes: ['*'] },
            ],
          },
        }),
      ),
    ).toEqual([
      'accessPolicy grants arn:aws:iam::111122223333:role/support, whose account 111122223333 is not in callerAccounts (the URL would refuse it)',
    ]);
    // An organization may hold any account; the stage's own pinned account is admitted.
    expect(() =>
      validateStage(
        withChanges({ callerAccounts: ['444455556666'], organizationId: 'o-a1b2c3d4e5' }),
      ),
    ).not.toThrow();
    expect(() =>
      validateStage(withChanges({ callerAccounts: ['444455556666'], account: '111122223333' })),
    ).not.toThrow();
  });

  it('defaults releases to a vend canary with a 3 s latency alarm, nothing provisioned, nothing throwaway', () => {
    const config = validateStage(example);

    expect(config).toMatchObject({
      vendDeployment: 'Canary10Percent5Minutes',
      vendLatencyP99AlarmMs: 3000,
      throwaway: false,
      terminationProtection: true,
    });
    expect(config).not.toHaveProperty('provisionedConcurrency');
  });

  it('names each bad release field, and refuses a protected throwaway stage', () => {
    expect(
      problemsOf(
        withChanges({
          vendDeployment: 'Canary50Percent',
          vendLatencyP99AlarmMs: 10,
          provisionedConcurrency: 0,
          throwaway: true,
          terminationProtection: true,
        }),
      ),
    ).toEqual([
      expect.stringMatching(/^vendDeployment must be one of Canary10Percent5Minutes, /),
      'vendLatencyP99AlarmMs must be an integer from 100 to 30000',
      'provisionedConcurrency must be an integer from 1 to 1000',
      'a throwaway stage cannot have terminationProtection: it is meant to be removed',
    ]);
    expect(validateStage(withChanges({ throwaway: true })).terminationProtection).toBe(false);
  });

  it("refuses more provisioned concurrency than vend's reservation, which Lambda would refuse at deploy", () => {
    expect(
      problemsOf(withChanges({ provisionedConcurrency: 11, reservedConcurrency: { vend: 10 } })),
    ).toEqual([
      'provisionedConcurrency (11) must not exceed reservedConcurrency.vend (10): provisioned instances count towards the reservation',
    ]);
    expect(
      validateStage(withChanges({ provisionedConcurrency: 10, reservedConcurrency: { vend: 10 } })),
    ).toMatchObject({ provisionedConcurrency: 10, reservedConcurrency: { vend: 10 } });
    // Either alone is checked on its own.
    expect(validateStage(withChanges({ provisionedConcurrency: 50 }))).toMatchObject({
      provisionedConcurrency: 50,
    });
    expect(
      validateStage(
        withChanges({ provisionedConcurrency: 5, reservedConcurrency: { refresh: 2 } }),
      ),
    ).toMatchObject({ provisionedConcurrency: 5 });
  });

  it('takes a policy max age AppConfig can poll at, 15 s or more', () => {
    expect(validateStage(withChanges({ policyMaxAgeSeconds: 15 })).policyMaxAgeSeconds).toBe(15);
    expect(problemsOf(withChanges({ policyMaxAgeSeconds: 14 }))).toEqual([
      'policyMaxAgeSeconds must be an integer from 15 to 3600 (AppConfig refuses polls closer together than 15 s)',
    ]);
  });

  it('regression: a providerBaseUrl with credentials in it is refused without quoting them', () => {
    const problems = problemsOf(withChanges({ providerBaseUrl: 'https://key:secret@p.example' }));

    expect(problems).toEqual(['providerBaseUrl must not contain a user name or password']);
  });

  it('takes key readers of the stage account, and names each bad one', () => {
    const readers = [
      {
        role: 'arn:aws:iam::111122223333:role/merchant-payments',
        businessApplicationIds: ['ba_123'],
      },
    ];
    expect(
      validateStage(withChanges({ keyIssuing: { ...example.keyIssuing, readers } })).keyIssuing
        .readers,
    ).toEqual(readers);
    expect(
      problemsOf(
        withChanges({
          account: '111122223333',
          keyIssuing: {
            ...example.keyIssuing,
            readers: [
              { role: 'merchant-payments', businessApplicationIds: ['ba 1'] },
              { role: 'arn:aws:iam::999999999999:role/x', businessApplicationIds: [] },
              'everyone',
            ],
          },
        }),
      ),
    ).toEqual([
      'keyIssuing.readers[0].role must be an IAM role ARN',
      'keyIssuing.readers[0].businessApplicationIds[0] must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$',
      "keyIssuing.readers[1].role must be a role of the stage's account 111122223333",
      'keyIssuing.readers[2] must be an object { role, businessApplicationIds }',
    ]);
  });

  it('refuses more caller accounts than the resource policy holds', () => {
    const callerAccounts = Array.from({ length: 21 }, (_, i) => String(100000000000 + i));
    expect(problemsOf(withChanges({ callerAccounts, organizationId: 'o-a1b2c3d4e5' }))).toEqual([
      expect.stringMatching(/^callerAccounts lists 21 accounts; at most 20 fit/),
    ]);
  });

  it('rejects a first policy version too large to travel in the template', () => {
    const grants = Array.from({ length: 6000 }, (_, i) => ({
      principal: `arn:aws:iam::111122223333:role/service-with-a-long-name-${i}`,
      scopes: ['*'],
    }));

    expect(problemsOf(withChanges({ accessPolicy: { scopes: ['ba_1'], grants } }))).toEqual([
      expect.stringMatching(
        /^accessPolicy is \d+ bytes as JSON; the stack deploys at most 500000 as the first version/,
      ),
    ]);
  });

  it.each([
    ['rate(5 minutes)'],
    ['rate(1 day)'],
    ['cron(0 3 * * ? *)'],
    ['cron(15 */6 ? * MON-FRI *)'],
    ['at(2027-01-01T03:00:00)'],
  ])('accepts the schedule %s', (schedule) => {
    expect(
      validateStage(withChanges({ keyIssuing: { businessApplicationIds: [], schedule } }))
        .keyIssuing.schedule,
    ).toBe(schedule);
  });

  it.each([
    ['rate(5 minute)'],
    ['rate(1 days)'],
    ['cron(0 3 * * ?)'],
    ['every day'],
    ['rate(0.5 hours)'],
  ])('rejects the schedule %s', (schedule) => {
    expect(
      problemsOf(withChanges({ keyIssuing: { businessApplicationIds: [], schedule } })),
    ).toEqual([expect.stringMatching(/^keyIssuing\.schedule must be/)]);
  });
});

describe('selectStage', () => {
  it('picks the example stage when no stage is named', () => {
    expect(DEFAULT_STAGE).toBe('example');
    expect(selectStage(stages, undefined, DEFAULT_STAGE).stage).toBe('example');
  });

  it('names the known stages when asked for an unknown one', () => {
    expect(() => selectStage(stages, 'prod', DEFAULT_STAGE)).toThrow(
      'Invalid stage configuration "prod":\n  - no such stage; known stages: example (add one in infra/stages/)',
    );
  });

  it('rejects a stage registered under another name than its own', () => {
    const misfiled: Record<string, StageInput> = { prod: example };

    expect(() => selectStage(misfiled, 'prod', 'prod')).toThrow(
      'its stage field is "example"; register it under that name',
    );
  });
});

describe('cdk.json', () => {
  it('sets every feature flag the installed aws-cdk-lib recommends, so synth builds on current defaults', () => {
    // Regression: with none set, `npm run synth` warned "85 feature flags are
    // not configured" and built on defaults kept only for old apps.
    const recommended = createRequire(import.meta.url)(
      'aws-cdk-lib/recommended-feature-flags.json',
    );
    expect(CDK_JSON_CONTEXT).toMatchObject(recommended);
  });
});
