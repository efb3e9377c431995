/**
 * Who can use the cache key, asked of the synthesized key policy with a
 * policy evaluator: the key seals every cached token and every recovery copy
 * of issued keys, so its policy is the one place that decides who can unseal.
 */
import type { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { KEY_ADMINISTRATION_ACTIONS } from '../../infra/constructs/token-cache.js';
import {
  ACCOUNT,
  ADMIN,
  ISSUE_KEYS,
  logicalId,
  REFRESH,
  REGION,
  resolveValue,
  roleIdOf,
  stage,
  synth,
  VEND,
} from '../support/infra.js';
import { evaluate, type PolicyRequest } from '../support/policy-evaluation.js';

const DEPLOYMENT_ROLE = `arn:aws:iam::${ACCOUNT}:role/cdk-hnb659fds-cfn-exec-role-${ACCOUNT}-${REGION}`;
const KEY_ADMIN = 'arn:aws:iam::123456789012:role/security/key-admins';
/** A principal of the account with `kms:*` on `*` in its IAM policies. */
const POWER_USER = `arn:aws:iam::${ACCOUNT}:role/PowerUser`;
const VIA_DYNAMODB = {
  'kms:ViaService': `dynamodb.${REGION}.amazonaws.com`,
  'kms:CallerAccount': ACCOUNT,
};
const USE_ACTIONS = [
  'kms:Encrypt',
  'kms:Decrypt',
  'kms:ReEncryptFrom',
  'kms:GenerateDataKey',
  'kms:GenerateDataKeyWithoutPlaintext',
  'kms:CreateGrant',
];

describe('the cache key policy', () => {
  let template: Template;
  let ask: (request: PolicyRequest) => string;
  let role: (fn: string) => string;

  beforeAll(() => {
    template = synth(stage({ keyAdministratorArns: [KEY_ADMIN] })).template;
    const key = logicalId(template, 'AWS::KMS::Key', 'seals cached tokens');
    const policy = template.toJSON().Resources[key].Properties.KeyPolicy;
    ask = (request) => evaluate(template, policy, request);
    role = (fn) => resolveValue(template, { 'Fn::GetAtt': [roleIdOf(template, fn), 'Arn'] });
  });

  it('does not hand the key to the account: an IAM policy with kms:* on * unseals nothing', () => {
    const root = `arn:aws:iam::${ACCOUNT}:root`;
    for (const principal of [root, POWER_USER]) {
      for (const action of ['kms:Decrypt', 'kms:PutKeyPolicy', 'kms:CreateGrant']) {
        expect(
          ask({ principal, action, context: { 'kms:EncryptionContext:pk': 'TOKEN#ba_1' } }),
        ).toBe('implicitly denied');
      }
    }
    const statements = template.toJSON().Resources[
      logicalId(template, 'AWS::KMS::Key', 'seals cached tokens')
    ].Properties.KeyPolicy.Statement as Array<{ Principal: unknown }>;
    expect(JSON.stringify(statements.map((s) => s.Principal))).not.toMatch(/:root|"\*"/);
  });

  it('lets only vend and refresh seal and unseal tokens, under TOKEN# contexts only', () => {
    for (const action of ['kms:Encrypt', 'kms:Decrypt']) {
      for (const fn of [VEND, REFRESH]) {
        expect(
          ask({
            principal: role(fn),
            action,
            context: { 'kms:EncryptionContext:pk': 'TOKEN#ba_1' },
          }),
        ).toBe('allowed');
        expect(
          ask({
            principal: role(fn),
            action,
            context: { 'kms:EncryptionContext:pk': 'KEYS#ba_1' },
          }),
        ).toBe('implicitly denied');
        expect(ask({ principal: role(fn), action })).toBe('implicitly denied');
      }
      for (const fn of [ISSUE_KEYS, ADMIN]) {
        expect(
          ask({
            principal: role(fn),
            action,
            context: { 'kms:EncryptionContext:pk': 'TOKEN#ba_1' },
          }),
        ).toBe('implicitly denied');
      }
    }
  });

  it('lets only issue-keys envelope-seal and open key-job copies, under KEYS# contexts only', () => {
    for (const action of ['kms:GenerateDataKey', 'kms:Decrypt']) {
      expect(
        ask({
          principal: role(ISSUE_KEYS),
          action,
          context: { 'kms:EncryptionContext:pk': 'KEYS#ba_1' },
        }),
      ).toBe('allowed');
      expect(
        ask({
          principal: role(ISSUE_KEYS),
          action,
          context: { 'kms:EncryptionContext:pk': 'TOKEN#ba_1' },
        }),
      ).toBe('implicitly denied');
      for (const fn of [VEND, REFRESH, ADMIN]) {
        expect(
          ask({
            principal: role(fn),
            action,
            context: { 'kms:EncryptionContext:pk': 'KEYS#ba_1' },
          }),
        ).toBe('implicitly denied');
      }
    }
    expect(
      ask({
        principal: role(ISSUE_KEYS),
        action: 'kms:Encrypt',
        context: { 'kms:EncryptionContext:pk': 'KEYS#ba_1' },
      }),
    ).toBe('implicitly denied');
  });

  it("lets every function use the key for the table's encryption, through DynamoDB only", () => {
    for (const fn of [VEND, REFRESH, ISSUE_KEYS, ADMIN]) {
      for (const action of [
        'kms:Decrypt',
        'kms:Encrypt',
        'kms:GenerateDataKey',
        'kms:DescribeKey',
      ]) {
        expect(ask({ principal: role(fn), action, context: VIA_DYNAMODB })).toBe('allowed');
      }
      expect(
        ask({
          principal: role(fn),
          action: 'kms:Decrypt',
          context: { ...VIA_DYNAMODB, 'kms:ViaService': `secretsmanager.${REGION}.amazonaws.com` },
        }),
      ).toBe('implicitly denied');
      expect(ask({ principal: role(fn), action: 'kms:CreateGrant', context: VIA_DYNAMODB })).toBe(
        'implicitly denied',
      );
    }
  });

  it('lets key administrators manage the key but never use it or change who may', () => {
    for (const action of KEY_ADMINISTRATION_ACTIONS) {
      expect(ask({ principal: KEY_ADMIN, action })).toBe('allowed');
    }
    for (const action of [...USE_ACTIONS, 'kms:PutKeyPolicy']) {
      for (const context of [
        {},
        { 'kms:EncryptionContext:pk': 'TOKEN#ba_1' },
        VIA_DYNAMODB,
      ] as Record<string, string>[]) {
        expect(ask({ principal: KEY_ADMIN, action, context })).toBe('implicitly denied');
      }
    }
    expect(
      KEY_ADMINISTRATION_ACTIONS.filter(
        (a) =>
          /Encrypt|Decrypt|GenerateDataKey|Grant$|PutKeyPolicy/.test(a) && a !== 'kms:RevokeGrant',
      ),
    ).toEqual([]);
  });

  it('lets the deployment role administer the key, change its policy and create the table, never unseal', () => {
    expect(ask({ principal: DEPLOYMENT_ROLE, action: 'kms:PutKeyPolicy' })).toBe('allowed');
    expect(ask({ principal: DEPLOYMENT_ROLE, action: 'kms:ScheduleKeyDeletion' })).toBe('allowed');
    // DynamoDB creates grants with the creator's credentials for its background work.
    expect(
      ask({
        principal: DEPLOYMENT_ROLE,
        action: 'kms:CreateGrant',
        context: { ...VIA_DYNAMODB, 'kms:GrantIsForAWSResource': true },
      }),
    ).toBe('allowed');
    expect(
      ask({ principal: DEPLOYMENT_ROLE, action: 'kms:CreateGrant', context: VIA_DYNAMODB }),
    ).toBe('implicitly denied');
    expect(ask({ principal: DEPLOYMENT_ROLE, action: 'kms:CreateGrant' })).toBe(
      'implicitly denied',
    );
    const contexts: Record<string, string>[] = [
      {},
      { 'kms:EncryptionContext:pk': 'TOKEN#ba_1' },
      { 'kms:EncryptionContext:pk': 'KEYS#ba_1' },
    ];
    for (const context of contexts) {
      expect(ask({ principal: DEPLOYMENT_ROLE, action: 'kms:Decrypt', context })).toBe(
        'implicitly denied',
      );
    }
  });

  it('lets DynamoDB read the key metadata, as its key policy guidance asks', () => {
    for (const action of ['kms:DescribeKey', 'kms:GetKeyPolicy', 'kms:ListAliases']) {
      expect(ask({ principal: 'dynamodb.amazonaws.com', action })).toBe('allowed');
    }
    expect(ask({ principal: 'dynamodb.amazonaws.com', action: 'kms:Decrypt' })).toBe(
      'implicitly denied',
    );
  });

  it('uses the deployment role a stage names instead of the bootstrap role', () => {
    const named = `arn:aws:iam::${ACCOUNT}:role/deploy/token-vending`;
    const { template: other } = synth(stage({ deploymentRoleArn: named }));
    const key = logicalId(other, 'AWS::KMS::Key', 'seals cached tokens');
    const policy = other.toJSON().Resources[key].Properties.KeyPolicy;

    expect(evaluate(other, policy, { principal: named, action: 'kms:PutKeyPolicy' })).toBe(
      'allowed',
    );
    expect(
      evaluate(other, policy, { principal: DEPLOYMENT_ROLE, action: 'kms:PutKeyPolicy' }),
    ).toBe('implicitly denied');
  });

  it('regression: has CloudFormation deploy as the role a stage names, the only one the key policy lets create the key', () => {
    // KMS refuses CreateKey with a policy that does not let the caller (here
    // CloudFormation's role) make a later PutKeyPolicy: `cdk deploy` must hand
    // CloudFormation the named role, not the bootstrap's execution role.
    const named = `arn:aws:iam::${ACCOUNT}:role/deploy/token-vending`;
    const { app, stack } = synth(stage({ deploymentRoleArn: named }));
    const { app: defaultApp, stack: defaultStack } = synth();

    expect(app.synth().getStackByName(stack.stackName).cloudFormationExecutionRoleArn).toBe(named);
    expect(
      defaultApp.synth().getStackByName(defaultStack.stackName).cloudFormationExecutionRoleArn,
    ).toMatch(/:role\/cdk-hnb659fds-cfn-exec-role-/);
  });
});
