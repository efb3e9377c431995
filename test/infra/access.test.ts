/**
 * Who may do what: the vend URL's resource-based policy and every role's
 * statements. Read-only assertions on the example stage share one fresh stack
 * per `describe`; tests with their own stage build their own.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { SecretsManagerKeyVault } from '../../functions/adapters/secrets-manager-key-vault.js';
import { example } from '../../infra/stages/example.js';
import {
  ADMIN,
  actionsOf,
  aliasId,
  allStatements,
  functionId,
  ISSUE_KEYS,
  logicalId,
  REFRESH,
  resolveValue,
  roleIdOf,
  type Statement,
  stage,
  statementsOf,
  synth,
  VEND,
} from '../support/infra.js';
import { evaluate } from '../support/policy-evaluation.js';

interface Permission {
  Action: string;
  FunctionName: unknown;
  Principal: unknown;
  FunctionUrlAuthType?: string;
  InvokedViaFunctionUrl?: boolean;
  SourceAccount?: unknown;
}

function permissions(template: Template): Permission[] {
  return Object.values(template.findResources('AWS::Lambda::Permission')).map(
    (r) => (r as { Properties: Permission }).Properties,
  );
}

/** The resource-based policy statements of vend's `live` alias, which the URL invokes. */
function vendPermissions(template: Template): Permission[] {
  const vend = JSON.stringify({ Ref: aliasId(template, VEND) });
  return permissions(template).filter((p) => JSON.stringify(p.FunctionName) === vend);
}

/** Each principal's permissions on the vend function, as `action/condition` strings. */
function grantsByPrincipal(template: Template): Map<string, string[]> {
  const byPrincipal = new Map<string, string[]>();
  for (const p of vendPermissions(template)) {
    const key = JSON.stringify(p.Principal);
    const grant =
      p.Action === 'lambda:InvokeFunctionUrl'
        ? `${p.Action}/FunctionUrlAuthType=${p.FunctionUrlAuthType}`
        : `${p.Action}/InvokedViaFunctionUrl=${p.InvokedViaFunctionUrl}`;
    byPrincipal.set(key, [...(byPrincipal.get(key) ?? []), grant].sort());
  }
  return byPrincipal;
}

const CALLER_GRANTS = [
  'lambda:InvokeFunction/InvokedViaFunctionUrl=true',
  'lambda:InvokeFunctionUrl/FunctionUrlAuthType=AWS_IAM',
];

const keyIssuerPrincipal = (template: Template) =>
  JSON.stringify({ 'Fn::GetAtt': [roleIdOf(template, ISSUE_KEYS), 'Arn'] });

describe('the vend Function URL', () => {
  let template: Template;
  beforeAll(() => {
    template = synth().template;
  });

  it("takes IAM-signed requests only, for the function's live alias", () => {
    template.hasResourceProperties('AWS::Lambda::Url', {
      AuthType: 'AWS_IAM',
      TargetFunctionArn: { 'Fn::GetAtt': [functionId(template, VEND), 'Arn'] },
      Qualifier: 'live',
    });
    template.resourceCountIs('AWS::Lambda::Url', 1);
  });

  it.each(['README.md', 'client/README.md'])(
    "regression: the caller's identity policy in %s names the URL's alias, not the bare function",
    (file) => {
      // The URL is on the live alias; a policy on the function's own ARN does
      // not cover its aliases, so a caller following the docs got 403.
      const [url] = Object.values(template.findResources('AWS::Lambda::Url'));
      const Qualifier = (url?.Properties as { Qualifier?: string } | undefined)?.Qualifier;
      expect(Qualifier).toBe('live');
      const text = readFileSync(resolve(import.meta.dirname, '../..', file), 'utf8');
      const policy = [...text.matchAll(/```json\n([\s\S]*?)\n```/g)]
        .map((block) => block[1] ?? '')
        .find((block) => block.includes('lambda:InvokeFunctionUrl'));
      const statements = (JSON.parse(policy ?? '{}') as { Statement: Array<{ Resource: string }> })
        .Statement;

      expect(statements).toHaveLength(2);
      for (const { Resource } of statements) {
        expect(Resource).toMatch(
          new RegExp(
            `^arn:aws:lambda:[a-z0-9-]+:\\d{12}:function:token-vending-[a-z0-9-]+-vend-token:${Qualifier}$`,
          ),
        );
      }
    },
  );

  it('admits the stage caller accounts and the issue-keys role, both permissions each', () => {
    expect(grantsByPrincipal(template)).toEqual(
      new Map([
        [JSON.stringify('111122223333'), CALLER_GRANTS],
        [keyIssuerPrincipal(template), CALLER_GRANTS],
      ]),
    );
  });

  it('lets only AppConfig invoke another function (the policy validator) through a resource-based policy', () => {
    const others = permissions(template).filter((p) => !vendPermissions(template).includes(p));
    expect(others).toEqual([
      {
        Action: 'lambda:InvokeFunction',
        FunctionName: { Ref: aliasId(template, 'token-vending-example-policy-validator') },
        Principal: 'appconfig.amazonaws.com',
      },
    ]);
  });
});

describe('URL permissions admit accounts, never single principals', () => {
  const manyGrants = (count: number) =>
    Array.from({ length: count }, (_, i) => ({
      principal: `arn:aws:iam::111122223333:role/caller-${i}`,
      scopes: ['*'],
    }));

  it('keeps the same statements whatever the access policy grants', () => {
    const statements = (grants: ReturnType<typeof manyGrants>) =>
      Object.values(
        synth(stage({ accessPolicy: { scopes: ['ba_1'], grants } })).template.findResources(
          'AWS::Lambda::Permission',
        ),
      )
        .filter(
          (r) =>
            JSON.stringify(r).includes('lambda:InvokeFunction') &&
            !JSON.stringify(r).includes('appconfig'),
        )
        .map((r) => JSON.stringify(r));

    expect(statements(manyGrants(2000))).toEqual(statements(manyGrants(2)));
    expect(statements(manyGrants(2))).toHaveLength(4);
  });

  it('admits each listed account by its id, once', () => {
    const { template } = synth(
      stage({
        callerAccounts: ['111122223333', '444455556666'],
        accessPolicy: {
          scopes: ['ba_1'],
          grants: [{ principal: 'arn:aws:iam::444455556666:root', scopes: ['*'] }],
        },
      }),
    );

    expect(grantsByPrincipal(template)).toEqual(
      new Map([
        [JSON.stringify('111122223333'), CALLER_GRANTS],
        [JSON.stringify('444455556666'), CALLER_GRANTS],
        [keyIssuerPrincipal(template), CALLER_GRANTS],
      ]),
    );
  });

  it('admits a whole organization through aws:PrincipalOrgID', () => {
    const { template } = synth(
      stage({ callerAccounts: undefined, organizationId: 'o-a1b2c3d4e5' }),
    );

    const org = permissions(template).filter((p) => p.Principal === '*');
    expect(org.map((p) => [p.Action, (p as { PrincipalOrgID?: string }).PrincipalOrgID])).toEqual([
      ['lambda:InvokeFunctionUrl', 'o-a1b2c3d4e5'],
      ['lambda:InvokeFunction', 'o-a1b2c3d4e5'],
    ]);
    expect(grantsByPrincipal(template)).toEqual(
      new Map([
        [JSON.stringify('*'), CALLER_GRANTS],
        [keyIssuerPrincipal(template), CALLER_GRANTS],
      ]),
    );
  });

  it("admits the stack's own account when the stage names no caller account or organization", () => {
    const { template } = synth(stage({ callerAccounts: undefined }));

    expect(grantsByPrincipal(template)).toEqual(
      new Map([
        [JSON.stringify({ Ref: 'AWS::AccountId' }), CALLER_GRANTS],
        [keyIssuerPrincipal(template), CALLER_GRANTS],
      ]),
    );
  });

  it('keeps each permission when the account list is reordered', () => {
    const ids = (callerAccounts: string[]) =>
      Object.keys(
        synth(stage({ callerAccounts })).template.findResources('AWS::Lambda::Permission'),
      ).sort();

    expect(ids(['444455556666', '111122223333'])).toEqual(ids(['111122223333', '444455556666']));
  });
});

describe('least privilege', () => {
  let template: Template;
  let table: string;
  let queue: string;
  beforeAll(() => {
    template = synth().template;
    table = logicalId(template, 'AWS::DynamoDB::Table', '"ttl"');
    queue = logicalId(template, 'AWS::SQS::Queue', 'SqsManagedSseEnabled');
  });

  /** A Secrets Manager ARN of this stack's account and region, for the secret `name`. */
  const secretsArn = (name: string) => ({
    'Fn::Join': [
      '',
      [
        'arn:',
        { Ref: 'AWS::Partition' },
        ':secretsmanager:',
        { Ref: 'AWS::Region' },
        ':',
        { Ref: 'AWS::AccountId' },
        `:secret:${name}`,
      ],
    ],
  });
  const secretArn = secretsArn('token-vending/example/provider-credentials-??????');
  const logs = (name: string): Statement => {
    const fn = template.toJSON().Resources[functionId(template, name)];
    return {
      Effect: 'Allow',
      Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
      Resource: { 'Fn::GetAtt': [fn.Properties.LoggingConfig.LogGroup.Ref, 'Arn'] },
    };
  };
  const items = (actions: string[], prefix: string, sid: string): Statement => ({
    Sid: sid,
    Effect: 'Allow',
    Action: actions.length === 1 ? (actions[0] as string) : [...actions].sort(),
    Resource: { 'Fn::GetAtt': [table, 'Arn'] },
    Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`${prefix}*`] } },
  });
  /** Scan of the named listing indexes only: never of the table, which no key condition limits. */
  const listThrough = (...indexes: string[]): Statement => {
    const arns = indexes.map((name) => ({
      'Fn::Join': ['', [{ 'Fn::GetAtt': [table, 'Arn'] }, `/index/${name}`]],
    }));
    return {
      Sid: 'ListThroughIndexes',
      Effect: 'Allow',
      Action: 'dynamodb:Scan',
      Resource: arns.length === 1 ? arns[0] : arns,
    };
  };
  const readSecret = (): Statement => ({
    Sid: 'ReadProviderCredentials',
    Effect: 'Allow',
    Action: 'secretsmanager:GetSecretValue',
    Resource: secretArn,
  });
  const readPolicy = (): Statement => {
    const ids = (type: string) => ({ Ref: Object.keys(template.findResources(type))[0] });
    return {
      Sid: 'ReadAccessPolicy',
      Effect: 'Allow',
      Action: ['appconfig:GetLatestConfiguration', 'appconfig:StartConfigurationSession'],
      Resource: {
        'Fn::Join': [
          '',
          [
            'arn:',
            { Ref: 'AWS::Partition' },
            ':appconfig:',
            { Ref: 'AWS::Region' },
            ':',
            { Ref: 'AWS::AccountId' },
            ':application/',
            ids('AWS::AppConfig::Application'),
            '/environment/',
            ids('AWS::AppConfig::Environment'),
            '/configuration/',
            ids('AWS::AppConfig::ConfigurationProfile'),
          ],
        ],
      },
    };
  };
  const failedRuns = (): Statement => ({
    Effect: 'Allow',
    Action: ['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage'],
    Resource: { 'Fn::GetAtt': [queue, 'Arn'] },
  });

  it('lets vend use token items and the one secret: nothing else (its key use is in the key policy)', () => {
    expect(statementsOf(template, roleIdOf(template, VEND))).toEqual([
      logs(VEND),
      items(['dynamodb:GetItem', 'dynamodb:UpdateItem'], 'TOKEN#', 'ItemsTokenOnly'),
      readSecret(),
      readPolicy(),
    ]);
  });

  it('lets refresh do what vend does, plus Scan of the token index and its failed-runs destination', () => {
    expect(statementsOf(template, roleIdOf(template, REFRESH))).toEqual([
      logs(REFRESH),
      items(['dynamodb:GetItem', 'dynamodb:UpdateItem'], 'TOKEN#', 'ItemsTokenOnly'),
      listThrough('tokens'),
      readSecret(),
      failedRuns(),
      readPolicy(),
    ]);
  });

  it('lets issue-keys use key-job items, envelope-seal them, and write secrets under its prefix only', () => {
    expect(statementsOf(template, roleIdOf(template, ISSUE_KEYS))).toEqual([
      logs(ISSUE_KEYS),
      items(['dynamodb:GetItem', 'dynamodb:UpdateItem'], 'KEYS#', 'ItemsKeysOnly'),
      {
        Sid: 'WriteIssuedKeySecrets',
        Effect: 'Allow',
        Action: [
          'secretsmanager:CreateSecret',
          'secretsmanager:DescribeSecret',
          'secretsmanager:PutSecretValue',
        ],
        Resource: secretsArn('token-vending/example/basic-auth/*'),
      },
      failedRuns(),
      readPolicy(),
    ]);
  });

  it('lets admin list through the token and key-job indexes, delete token items and invoke refresh and issue-keys: no key, no secret', () => {
    expect(statementsOf(template, roleIdOf(template, ADMIN))).toEqual([
      logs(ADMIN),
      items(['dynamodb:DeleteItem'], 'TOKEN#', 'ItemsTokenOnly'),
      listThrough('key-jobs', 'tokens'),
      {
        Sid: 'InvokeRefreshAndIssueKeys',
        Effect: 'Allow',
        Action: 'lambda:InvokeFunction',
        Resource: expect.arrayContaining([
          { Ref: aliasId(template, REFRESH) },
          { Ref: aliasId(template, ISSUE_KEYS) },
        ]),
      },
      readPolicy(),
    ]);
    const invoke = statementsOf(template, roleIdOf(template, ADMIN)).at(-2);
    expect(invoke?.Resource).toHaveLength(2);
  });

  it("lets each schedule invoke its one function's live alias and send to the failed-runs queue", () => {
    for (const name of [REFRESH, ISSUE_KEYS]) {
      const target = aliasId(template, name);
      const schedule = Object.values(
        template.findResources('AWS::Scheduler::Schedule', {
          Properties: { Target: { Arn: { Ref: target } } },
        }),
      )[0] as { Properties: { Target: { RoleArn: { 'Fn::GetAtt': [string, string] } } } };
      const role = schedule.Properties.Target.RoleArn['Fn::GetAtt'][0];

      expect(statementsOf(template, role)).toEqual([
        {
          Sid: 'InvokeTheTarget',
          Effect: 'Allow',
          Action: 'lambda:InvokeFunction',
          Resource: { Ref: target },
        },
        {
          Sid: 'DeadLetters',
          Effect: 'Allow',
          Action: 'sqs:SendMessage',
          Resource: { 'Fn::GetAtt': [queue, 'Arn'] },
        },
      ]);
      expect(template.toJSON().Resources[role].Properties.AssumeRolePolicyDocument).toEqual({
        Version: '2012-10-17',
        Statement: [
          {
            Effect: 'Allow',
            Action: 'sts:AssumeRole',
            Principal: { Service: 'scheduler.amazonaws.com' },
            Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } },
          },
        ],
      });
    }
  });

  it('lets no role but vend and refresh read the credentials secret', () => {
    const readers = [...allStatements(template)]
      .filter(([, statements]) =>
        statements.some((s) =>
          actionsOf(s).some((a) => /^secretsmanager:(GetSecretValue|\*)$|^\*$/.test(a)),
        ),
      )
      .map(([role]) => role)
      .sort();

    expect(readers).toEqual([roleIdOf(template, REFRESH), roleIdOf(template, VEND)].sort());
  });

  it("regression: the secret's own resource policy denies reading it to every principal but vend and refresh", () => {
    // An identity policy's Allow (PowerUserAccess, say) read it before: in the
    // secret's account nothing denied it.
    const policies = Object.values(template.findResources('AWS::SecretsManager::ResourcePolicy'));
    expect(policies).toHaveLength(1);
    const [policy] = policies as Array<{
      Properties: {
        ResourcePolicy: { Statement: unknown[] };
        SecretId: string;
        BlockPublicPolicy: boolean;
      };
    }>;
    if (!policy) throw new Error('no resource policy on the secret');
    const { ResourcePolicy, SecretId, BlockPublicPolicy } = policy.Properties;
    const secret = `arn:aws:secretsmanager:eu-west-1:123456789012:secret:${SecretId}-AbCdEf`;
    const ask = (principal: string) =>
      evaluate(template, ResourcePolicy, {
        principal,
        action: 'secretsmanager:GetSecretValue',
        resource: secret,
      });
    const role = (name: string) => `arn:aws:iam::123456789012:role/${roleIdOf(template, name)}`;

    expect(SecretId).toBe('token-vending/example/provider-credentials');
    expect(BlockPublicPolicy).toBe(true);
    for (const reader of [VEND, REFRESH]) expect(ask(role(reader))).not.toBe('denied');
    for (const other of [
      role(ISSUE_KEYS),
      role(ADMIN),
      'arn:aws:iam::123456789012:role/PowerUser',
      'arn:aws:iam::123456789012:root',
    ]) {
      expect(ask(other)).toBe('denied');
    }
  });

  it('uses no wildcard resource or action but the acknowledged key-secrets prefix', () => {
    const wildcards = [...allStatements(template)].flatMap(([role, statements]) =>
      statements.flatMap((s) => [
        ...actionsOf(s)
          .filter((a) => a.includes('*'))
          .map((a) => `${role} action ${a}`),
        ...(Array.isArray(s.Resource) ? s.Resource : [s.Resource])
          .map((r) => JSON.stringify(r))
          .filter((r) => r.includes('*'))
          .map((r) => `${role} resource ${r}`),
      ]),
    );

    expect(wildcards).toEqual([
      `${roleIdOf(template, ISSUE_KEYS)} resource ${JSON.stringify(
        statementsOf(template, roleIdOf(template, ISSUE_KEYS)).find(
          (s) => s.Sid === 'WriteIssuedKeySecrets',
        )?.Resource,
      )}`,
    ]);
  });

  it('attaches no managed policy to any role', () => {
    for (const role of Object.values(template.findResources('AWS::IAM::Role'))) {
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    }
  });
});

describe('least privilege with a complete secret ARN', () => {
  it('grants GetSecretValue on exactly that ARN', () => {
    const arn = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:provider-AbC123';
    const { template } = synth(stage({ credentialsSecret: arn }));

    for (const name of [VEND, REFRESH]) {
      expect(
        statementsOf(template, roleIdOf(template, name)).find(
          (s) => s.Sid === 'ReadProviderCredentials',
        ),
      ).toEqual({
        Sid: 'ReadProviderCredentials',
        Effect: 'Allow',
        Action: 'secretsmanager:GetSecretValue',
        Resource: arn,
      });
    }
  });
});

describe('roles that read issued keys', () => {
  it('lets each reader role read the keys of its own business applications, nothing else', () => {
    const { template } = synth(
      stage({
        keyIssuing: {
          ...example.keyIssuing,
          readers: [
            {
              role: 'arn:aws:iam::123456789012:role/payments/merchant-payments',
              businessApplicationIds: ['ba_123', 'ba_456'],
            },
          ],
        },
      }),
    );

    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyName: 'token-vending-example-read-keys-0',
      Roles: ['merchant-payments'],
      PolicyDocument: {
        Statement: [
          {
            Sid: 'ReadIssuedKeys',
            Effect: 'Allow',
            Action: ['secretsmanager:DescribeSecret', 'secretsmanager:GetSecretValue'],
            Condition: { StringEquals: { 'aws:PrincipalAccount': '123456789012' } },
            Resource: ['ba_123', 'ba_456'].map((id) => ({
              'Fn::Join': [
                '',
                [
                  'arn:',
                  { Ref: 'AWS::Partition' },
                  ':secretsmanager:',
                  { Ref: 'AWS::Region' },
                  ':',
                  { Ref: 'AWS::AccountId' },
                  `:secret:token-vending/example/basic-auth/${id}-??????`,
                ],
              ],
            })),
          },
        ],
      },
    });
  });

  it("regression: a reader of an id with ':' is granted the secret the vault writes ('@' in its name)", () => {
    const { template } = synth(
      stage({
        keyIssuing: {
          ...example.keyIssuing,
          readers: [
            {
              role: 'arn:aws:iam::123456789012:role/merchant-payments',
              businessApplicationIds: ['ba:eu:1'],
            },
          ],
        },
      }),
    );
    const vault = new SecretsManagerKeyVault({
      client: new SecretsManagerClient({ region: 'eu-west-1' }),
      prefix: 'token-vending/example',
    });

    const [policy] = Object.values(template.findResources('AWS::IAM::Policy')).filter((p) =>
      JSON.stringify(p).includes('ReadIssuedKeys'),
    );
    if (!policy) throw new Error('no reader policy');
    const { Resource } =
      (policy.Properties as { PolicyDocument: { Statement: Array<{ Resource: unknown }> } })
        .PolicyDocument.Statement[0] ?? {};
    const granted = resolveValue(template, Array.isArray(Resource) ? Resource[0] : Resource);

    expect(granted).toBe(
      `arn:aws:secretsmanager:eu-west-1:123456789012:secret:${vault.locationOf('ba:eu:1')}-??????`,
    );
    expect(vault.locationOf('ba:eu:1')).toBe('token-vending/example/basic-auth/ba@eu@1');
  });

  it('grants no reader by default', () => {
    const { template } = synth();

    expect(
      Object.values(template.findResources('AWS::IAM::Policy')).filter((p) =>
        JSON.stringify(p).includes('ReadIssuedKeys'),
      ),
    ).toEqual([]);
  });
});
