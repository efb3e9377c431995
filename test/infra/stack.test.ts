/**
 * The table, the key, the four functions, their environment and the outputs.
 *
 * Fresh stack per test where a test builds its own stage; the read-only
 * assertions on the example stage share one fresh stack per `describe` (built
 * in `beforeAll`, never changed), because a synth takes about a second and the
 * assertions only read the template.
 */
import { Match, type Template } from 'aws-cdk-lib/assertions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_TIMEOUT_MS } from '../../client/token-vending-client.js';
import { AccessPolicy } from '../../functions/core/access-policy.js';
import { EnvReader } from '../../functions/core/config.js';
import { readKeyIssuingSettings } from '../../functions/issue-keys/config.js';
import { createAwsRuntime } from '../../functions/vend-token/aws-runtime.js';
import { RUNTIME } from '../../infra/constructs/token-vending-function.js';
import { example } from '../../infra/stages/example.js';
import {
  ACCOUNT,
  ADMIN,
  environmentOf,
  FUNCTIONS,
  functionId,
  ISSUE_KEYS,
  logicalId,
  REFRESH,
  REGION,
  roleIdOf,
  stage,
  synth,
  VEND,
} from '../support/infra.js';

describe('the example stage', () => {
  let template: Template;
  beforeAll(() => {
    template = synth().template;
  });

  describe('table and key', () => {
    it('is an on-demand table keyed by pk, with TTL on ttl and point-in-time recovery', () => {
      template.hasResourceProperties('AWS::DynamoDB::Table', {
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        // Its listing indexes' keys too: test/infra/table-listing.test.ts
        AttributeDefinitions: Match.arrayWith([{ AttributeName: 'pk', AttributeType: 'S' }]),
        TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        DeletionProtectionEnabled: true,
      });
    });

    it('encrypts the table with the customer managed key, which rotates', () => {
      const keyId = logicalId(template, 'AWS::KMS::Key', 'seals cached tokens');
      template.hasResourceProperties('AWS::DynamoDB::Table', {
        SSESpecification: {
          SSEEnabled: true,
          SSEType: 'KMS',
          KMSMasterKeyId: { 'Fn::GetAtt': [keyId, 'Arn'] },
        },
      });
      template.hasResourceProperties('AWS::KMS::Key', {
        Description: Match.stringLikeRegexp('seals cached tokens'),
        EnableKeyRotation: true,
      });
      template.hasResourceProperties('AWS::KMS::Alias', {
        AliasName: 'alias/token-vending-example',
        TargetKeyId: { 'Fn::GetAtt': [keyId, 'Arn'] },
      });
    });

    it('keeps the table and the key when the stack is deleted', () => {
      template.hasResource('AWS::DynamoDB::Table', {
        DeletionPolicy: 'Retain',
        UpdateReplacePolicy: 'Retain',
      });
      template.hasResource('AWS::KMS::Key', {
        Properties: { Description: Match.stringLikeRegexp('seals cached tokens') },
        DeletionPolicy: 'Retain',
      });
    });
  });

  describe('functions', () => {
    it('uses the newest Node.js runtime aws-cdk-lib offers', () => {
      const versions = Object.entries(lambda.Runtime)
        .filter(([name]) => /^NODEJS_\d+_X$/.test(name))
        .map(([name]) => Number(/\d+/.exec(name)?.[0]));
      expect(RUNTIME.name).toBe(`nodejs${Math.max(...versions)}.x`);
    });

    it.each(FUNCTIONS)('builds %s as an ESM bundle on the newest runtime, ARM64', (name) => {
      template.hasResourceProperties('AWS::Lambda::Function', {
        FunctionName: name,
        Runtime: RUNTIME.name,
        Architectures: ['arm64'],
        // NodejsFunction with OutputFormat.ESM writes index.mjs.
        Handler: 'index.handler',
      });
    });

    it.each(FUNCTIONS)('starts %s without decoding its source map at every cold start', (name) => {
      // --enable-source-maps costs vend 7 to 9 ms a cold start; the logger maps
      // a logged error's stack instead (test/integration/source-mapped-stacks.test.ts).
      expect(environmentOf(template, name).NODE_OPTIONS).toBeUndefined();
    });

    it.each(FUNCTIONS)('gives %s its own log group with a retention', (name) => {
      const fn = template.toJSON().Resources[functionId(template, name)];
      const logGroupId = fn.Properties.LoggingConfig.LogGroup.Ref as string;
      expect(template.toJSON().Resources[logGroupId]).toMatchObject({
        Type: 'AWS::Logs::LogGroup',
        Properties: { RetentionInDays: 365 },
        DeletionPolicy: 'Retain',
      });
    });

    it.each([
      [VEND, 30, 512],
      [REFRESH, 240, 512],
      [ISSUE_KEYS, 600, 256],
      [ADMIN, 660, 256],
    ])('sizes %s: timeout %i s, %i MB, and reserves no concurrency', (name, timeout, memory) => {
      // A new account's concurrency quota may be 10: the example stage reserves none.
      template.hasResourceProperties('AWS::Lambda::Function', {
        FunctionName: name,
        Timeout: timeout,
        MemorySize: memory,
        ReservedConcurrentExecutions: Match.absent(),
      });
    });

    it("gives the client library's default timeout as long as the vend function may answer", () => {
      const vendTimeout = template.toJSON().Resources[functionId(template, VEND)].Properties
        .Timeout as number;
      expect(DEFAULT_TIMEOUT_MS).toBeGreaterThanOrEqual(vendTimeout * 1000);
    });

    it('keeps the issue-keys timeout clear of the 145 s the job reserves, and the admin waiting longer', () => {
      const timeout = (name: string) =>
        template.toJSON().Resources[functionId(template, name)].Properties.Timeout as number;
      expect(timeout(ISSUE_KEYS)).toBeGreaterThanOrEqual(300);
      expect(timeout(ADMIN)).toBeGreaterThan(timeout(ISSUE_KEYS));
      // A scheduled refresh ends before the next one starts.
      expect(timeout(REFRESH)).toBeLessThan(300);
    });

    it('gives each function its own role, used by no other function', () => {
      const roles = FUNCTIONS.map((name) => roleIdOf(template, name));
      expect(new Set(roles).size).toBe(4);
      template.resourcePropertiesCountIs(
        'AWS::IAM::Role',
        {
          AssumeRolePolicyDocument: Match.objectLike({
            Statement: [Match.objectLike({ Principal: { Service: 'lambda.amazonaws.com' } })],
          }),
          ManagedPolicyArns: Match.anyValue(),
        },
        0,
      );
    });
  });

  describe('environment', () => {
    it('gives vend exactly the variables of its configuration', () => {
      const env = environmentOf(template, VEND);
      expect(Object.keys(env).sort()).toEqual([
        'CREDENTIALS_SECRET_ARN',
        'KEY_ISSUER_ARN',
        'KMS_KEY_ID',
        'POLICY_APPCONFIG_APPLICATION',
        'POLICY_APPCONFIG_ENVIRONMENT',
        'POLICY_APPCONFIG_PROFILE',
        'POLICY_MAX_AGE_SECONDS',
        'PROVIDER_BASE_URL',
        'REFRESH_AHEAD_SECONDS',
        'TABLE_NAME',
        'UNSCOPED_SCOPE_MODE',
      ]);
      expect(env).toMatchObject({
        PROVIDER_BASE_URL: 'https://api.provider.example',
        CREDENTIALS_SECRET_ARN: example.credentialsSecret,
        UNSCOPED_SCOPE_MODE: 'omit',
        REFRESH_AHEAD_SECONDS: '900',
        KMS_KEY_ID: expect.stringMatching(/^arn:aws:kms:/),
      });
    });

    it('is accepted by the vend function own configuration reader, reading the policy from AppConfig', () => {
      const env = environmentOf(template, VEND);
      const { settings } = createAwsRuntime(env, 'vend-token');
      expect(settings.providerBaseUrl).toBe('https://api.provider.example');
      expect(settings.policy).toMatchObject({
        kind: 'appconfig',
        application: expect.stringMatching(/^accesspolicyapplication.*-physical-name$/),
        environment: expect.stringMatching(/^accesspolicyenvironment.*-physical-name$/),
        profile: expect.stringMatching(/^accesspolicyprofile.*-physical-name$/),
        maxAgeSeconds: 60,
      });
    });

    it("deploys the stage's policy and key-issuing ids as the first version, and grants the issue-keys role the unscoped token in every version", () => {
      const role = roleIdOf(template, ISSUE_KEYS);
      const [version] = Object.values(
        template.findResources('AWS::AppConfig::HostedConfigurationVersion'),
      ) as Array<{ Properties: { Content: string } }>;
      const document = JSON.parse(version?.Properties.Content as string);
      const env = environmentOf(template, VEND);
      const policy = AccessPolicy.parse(JSON.stringify(document), {
        fixedGrants: [{ principal: env.KEY_ISSUER_ARN as string, unscoped: true }],
      });
      const session = `arn:aws:sts::${ACCOUNT}:assumed-role/${role}/${ISSUE_KEYS}`;

      expect(document).toEqual({
        scopes: example.accessPolicy.scopes,
        grants: example.accessPolicy.grants,
        keyIssuing: { businessApplicationIds: ['ba_123'] },
      });
      expect(env.KEY_ISSUER_ARN).toBe(`arn:aws:iam::${ACCOUNT}:role/${role}`);
      expect(policy.allows(session, undefined)).toBe(true);
      expect(policy.allows(session, 'ba_123')).toBe(false);
    });

    it('gives refresh the vend settings plus the in-use window and the schedule period', () => {
      const vend = environmentOf(template, VEND);
      const refresh = environmentOf(template, REFRESH);
      const { KEY_ISSUER_ARN: _, ...shared } = vend;
      expect(refresh).toEqual({
        ...shared,
        IN_USE_WINDOW_SECONDS: '3600',
        REFRESH_INTERVAL_SECONDS: '300',
      });
      const { extra } = createAwsRuntime(refresh, 'refresh', (reader) => ({
        interval: reader.integer('REFRESH_INTERVAL_SECONDS', 300, 60, 3600),
      }));
      expect(extra.interval).toBe(300);
    });

    it('gives issue-keys the vend URL, the policy (its ids), the secrets prefix and no provider secret', () => {
      const env = environmentOf(template, ISSUE_KEYS);
      expect(env).not.toHaveProperty('CREDENTIALS_SECRET_ARN');
      expect(env).not.toHaveProperty('ACCESS_POLICY');
      expect(env).not.toHaveProperty('KEY_ISSUE_BUSINESS_APPLICATION_IDS');
      expect(env).toMatchObject({
        SECRETS_PREFIX: 'token-vending/example',
        POLICY_APPCONFIG_PROFILE: environmentOf(template, VEND).POLICY_APPCONFIG_PROFILE,
        VEND_URL: expect.stringMatching(/^https:\/\/.+\.lambda-url\.eu-west-1\.on\.aws\/$/),
      });
      const reader = new EnvReader(env);
      readKeyIssuingSettings(reader);
      expect(reader.policySettings()).toMatchObject({ kind: 'appconfig' });
      reader.required('TABLE_NAME');
      reader.required('KMS_KEY_ID');
      reader.done();
      const vendUrl =
        template.toJSON().Resources[functionId(template, ISSUE_KEYS)].Properties.Environment
          .Variables.VEND_URL;
      expect(vendUrl).toEqual({
        'Fn::GetAtt': [
          logicalId(template, 'AWS::Lambda::Url', '"AuthType":"AWS_IAM"'),
          'FunctionUrl',
        ],
      });
    });

    it('gives admin the live aliases of the functions it invokes and no secret', () => {
      const env = environmentOf(template, ADMIN);
      expect(Object.keys(env).sort()).toEqual([
        'IN_USE_WINDOW_SECONDS',
        'ISSUE_KEYS_FUNCTION_NAME',
        'POLICY_APPCONFIG_APPLICATION',
        'POLICY_APPCONFIG_ENVIRONMENT',
        'POLICY_APPCONFIG_PROFILE',
        'POLICY_MAX_AGE_SECONDS',
        'REFRESH_FUNCTION_NAME',
        'TABLE_NAME',
      ]);
      expect(env).toMatchObject({
        REFRESH_FUNCTION_NAME: `${REFRESH}:live`,
        ISSUE_KEYS_FUNCTION_NAME: `${ISSUE_KEYS}:live`,
        IN_USE_WINDOW_SECONDS: '3600',
      });
    });

    it('gives every function the one table', () => {
      const tableId = logicalId(template, 'AWS::DynamoDB::Table', '"AttributeName":"ttl"');
      for (const name of FUNCTIONS) {
        template.hasResourceProperties('AWS::Lambda::Function', {
          FunctionName: name,
          Environment: { Variables: Match.objectLike({ TABLE_NAME: { Ref: tableId } }) },
        });
      }
    });
  });

  describe('outputs', () => {
    it('names the vend URL, the table, its key and the dashboard', () => {
      template.hasOutput('VendUrl', {
        Value: {
          'Fn::GetAtt': [logicalId(template, 'AWS::Lambda::Url', 'AWS_IAM'), 'FunctionUrl'],
        },
      });
      template.hasOutput('TableName', {
        Value: { Ref: logicalId(template, 'AWS::DynamoDB::Table', '"ttl"') },
      });
      // Removing a stage that keeps its key needs the key's ARN after the stack is gone.
      template.hasOutput('CacheKeyArn', {
        Value: {
          'Fn::GetAtt': [logicalId(template, 'AWS::KMS::Key', 'seals cached tokens'), 'Arn'],
        },
      });
      template.hasOutput('DashboardUrl', {
        Value: {
          'Fn::Join': [
            '',
            Match.arrayWith([
              Match.stringLikeRegexp('#dashboards/dashboard/token-vending-example$'),
            ]),
          ],
        },
      });
    });
  });
});

describe('stage variations', () => {
  it('reads the credentials by complete ARN when the stage gives one', () => {
    const arn = `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:provider-AbC123`;
    const { template } = synth(stage({ credentialsSecret: arn }));

    expect(environmentOf(template, VEND).CREDENTIALS_SECRET_ARN).toBe(arn);
  });

  it('reserves concurrency for each function the stage names, and only those', () => {
    const { template } = synth(
      stage({ reservedConcurrency: { vend: 50, refresh: 2, issueKeys: 1 } }),
    );

    for (const [name, reserved] of [
      [VEND, 50],
      [REFRESH, 2],
      [ISSUE_KEYS, 1],
    ] as const) {
      template.hasResourceProperties('AWS::Lambda::Function', {
        FunctionName: name,
        ReservedConcurrentExecutions: reserved,
      });
    }
    template.hasResourceProperties('AWS::Lambda::Function', {
      FunctionName: ADMIN,
      ReservedConcurrentExecutions: Match.absent(),
    });
    const { template: vendOnly } = synth(stage({ reservedConcurrency: { vend: 10 } }));
    vendOnly.hasResourceProperties('AWS::Lambda::Function', {
      FunctionName: REFRESH,
      ReservedConcurrentExecutions: Match.absent(),
    });
  });

  it('passes the key-issuing request body and unscoped mode through', () => {
    const { template } = synth(
      stage({
        unscopedScopeMode: 'empty',
        keyIssuing: { ...example.keyIssuing, requestBody: { label: 'token vending' } },
      }),
    );

    expect(environmentOf(template, VEND).UNSCOPED_SCOPE_MODE).toBe('empty');
    expect(environmentOf(template, ISSUE_KEYS).KEY_ISSUE_REQUEST_BODY).toBe(
      '{"label":"token vending"}',
    );
  });

  it('protects the stack from deletion unless the stage turns it off', () => {
    const { terminationProtection: _, ...rest } = example;

    expect(synth(rest).stack.terminationProtection).toBe(true);
    expect(synth(stage({ terminationProtection: false })).stack.terminationProtection).toBe(false);
  });

  it('tags every taggable resource with the project and the stage', () => {
    const { template } = synth(stage({ stage: 'prod', secretsPrefix: 'token-vending/prod' }));
    const tags = [
      { Key: 'project', Value: 'token-vending' },
      { Key: 'stage', Value: 'prod' },
    ];

    for (const type of ['AWS::DynamoDB::Table', 'AWS::KMS::Key', 'AWS::Lambda::Function']) {
      for (const resource of Object.values(template.findResources(type))) {
        expect(resource.Properties.Tags ?? []).toEqual(expect.arrayContaining(tags));
      }
    }
    // DynamoDB, KMS and Lambda resources above; the table, the key and four functions at least.
    expect(Object.keys(template.findResources('AWS::Lambda::Function')).length).toBeGreaterThan(3);
  });

  it('names functions, alias and dashboard after the stage', () => {
    const { template } = synth(stage({ stage: 'prod', secretsPrefix: 'token-vending/prod' }));

    template.hasResourceProperties('AWS::Lambda::Function', {
      FunctionName: 'token-vending-prod-vend-token',
    });
    template.hasResourceProperties('AWS::KMS::Alias', { AliasName: 'alias/token-vending-prod' });
    template.hasResourceProperties('AWS::CloudWatch::Dashboard', {
      DashboardName: 'token-vending-prod',
    });
  });
});
