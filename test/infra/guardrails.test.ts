/**
 * The guardrails the stack produces around the vend URL's door: the service
 * control policy in its outputs and the permissions boundary it creates. Each
 * is asserted by its exact conditions and asked, with a policy evaluator,
 * what it does to a direct Invoke, a URL invocation and a change.
 */
import type { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { SynthInputError } from '../../infra/config.js';
import {
  ACCESS_POLICY_CHANGE_ACTIONS,
  FUNCTION_CHANGE_ACTIONS,
  ROLE_CHANGE_ACTIONS,
  SECRET_POLICY_ACTIONS,
} from '../../infra/constructs/guardrails.js';
import { MAX_POLICY_EDITORS } from '../../infra/stage-access.js';
import {
  ACCOUNT,
  FUNCTIONS,
  REGION,
  resolveValue,
  roleIdOf,
  stage,
  synth,
  VEND,
} from '../support/infra.js';
import { evaluate, resolveDocument } from '../support/policy-evaluation.js';

const VEND_ARN = `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${VEND}`;
const DEPLOYMENT_ROLE = `arn:aws:iam::${ACCOUNT}:role/cdk-hnb659fds-cfn-exec-role-${ACCOUNT}-${REGION}`;
const CALLER = `arn:aws:iam::${ACCOUNT}:role/checkout`;
const BOUNDARY_ARN = `arn:aws:iam::${ACCOUNT}:policy/token-vending-example-caller-boundary`;
const VALIDATOR = 'token-vending-example-policy-validator';
/** Every function of the stack: the four and the access policy's validator. */
const ALL_FUNCTIONS = [...FUNCTIONS, VALIDATOR];
const functionArn = (name: string) => `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${name}`;
const SECRET_ARN = `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:token-vending/example/provider-credentials-??????`;
/** The provider secret and its replicas, in any region. */
const SECRET_ANY_REGION = SECRET_ARN.replace(`:${REGION}:`, ':*:');

/** `statements` with each Resource list sorted. */
function withSortedResources(statements: unknown[]): unknown[] {
  return statements.map((statement) => {
    const { Resource } = statement as { Resource?: unknown };
    return Array.isArray(Resource)
      ? { ...(statement as object), Resource: [...Resource].sort() }
      : statement;
  });
}

/** The statements both documents carry, exactly. */
function doorStatements(
  vendArn: unknown,
  deploymentPrincipals: unknown[],
  functionRoles: string[],
  policyApplicationArn: string,
  policyStrategyArn: string,
) {
  const outsideDeployment = { ArnNotLike: { 'aws:PrincipalArn': deploymentPrincipals } };
  return [
    {
      Sid: 'DenyVendInvokeOutsideItsUrl',
      Effect: 'Deny',
      Action: 'lambda:InvokeFunction',
      Resource: [vendArn, `${vendArn}:*`],
      Condition: { BoolIfExists: { 'lambda:InvokedViaFunctionUrl': 'false' } },
    },
    {
      Sid: 'DenyFunctionChangesOutsideDeployment',
      Effect: 'Deny',
      Action: [...FUNCTION_CHANGE_ACTIONS],
      Resource: ALL_FUNCTIONS.flatMap((name) => [functionArn(name), `${functionArn(name)}:*`]),
      Condition: outsideDeployment,
    },
    {
      Sid: 'DenyFunctionRolesOutsideDeployment',
      Effect: 'Deny',
      Action: [...ROLE_CHANGE_ACTIONS],
      Resource: functionRoles,
      Condition: outsideDeployment,
    },
    {
      Sid: 'DenyProviderSecretPolicyOutsideDeployment',
      Effect: 'Deny',
      Action: [...SECRET_POLICY_ACTIONS],
      Resource: SECRET_ANY_REGION,
      Condition: outsideDeployment,
    },
    {
      Sid: 'DenyAccessPolicyChangesOutsideEditors',
      Effect: 'Deny',
      Action: [...ACCESS_POLICY_CHANGE_ACTIONS],
      Resource: [policyApplicationArn, `${policyApplicationArn}/*`, policyStrategyArn],
      // The example stage names no policy editor: the deployment principals alone.
      Condition: outsideDeployment,
    },
  ];
}

describe('guardrails', () => {
  let template: Template;
  let scp: { Statement: unknown[] };
  let boundary: { Statement: unknown[] };
  /** The deployment role and CodeDeploy's, which moves vend's live alias in a release. */
  let deployers: string[];
  /** Each function's role, as the policies name it. */
  let functionRoles: string[];
  /** The access policy's AppConfig application. */
  let policyApplication: string;
  /** Its deployment strategy. */
  let policyStrategy: string;

  beforeAll(() => {
    template = synth().template;
    const output = template.toJSON().Outputs.GuardrailServiceControlPolicy;
    scp = JSON.parse(resolveValue(template, output.Value));
    const policies = template.findResources('AWS::IAM::ManagedPolicy', {
      Properties: { ManagedPolicyName: 'token-vending-example-caller-boundary' },
    });
    const codeDeploy = Object.keys(
      template.findResources('AWS::IAM::Role', {
        Properties: {
          AssumeRolePolicyDocument: {
            Statement: [{ Principal: { Service: 'codedeploy.amazonaws.com' } }],
          },
        },
      }),
    )[0];
    deployers = [DEPLOYMENT_ROLE, `arn:aws:iam::${ACCOUNT}:role/${codeDeploy}`];
    functionRoles = ALL_FUNCTIONS.map(
      (name) => `arn:aws:iam::${ACCOUNT}:role/${roleIdOf(template, name)}`,
    );
    const application = Object.keys(template.findResources('AWS::AppConfig::Application'))[0];
    policyApplication = `arn:aws:appconfig:${REGION}:${ACCOUNT}:application/${resolveValue(template, { Ref: application })}`;
    const strategy = Object.keys(template.findResources('AWS::AppConfig::DeploymentStrategy'))[0];
    policyStrategy = `arn:aws:appconfig:${REGION}:${ACCOUNT}:deploymentstrategy/${resolveValue(template, { Ref: strategy })}`;
    boundary = (
      Object.values(policies)[0] as { Properties: { PolicyDocument: { Statement: unknown[] } } }
    ).Properties.PolicyDocument;
  });

  it('outputs a service control policy that denies a direct Invoke and changes outside deployment', () => {
    expect(scp).toEqual({
      Version: '2012-10-17',
      Statement: doorStatements(
        VEND_ARN,
        deployers,
        functionRoles,
        policyApplication,
        policyStrategy,
      ),
    });
    // AWS Organizations takes SCPs of at most 5,120 characters.
    expect(JSON.stringify(scp).length).toBeLessThan(5120);
  });

  it('creates a permissions boundary with the same denials, and protects itself', () => {
    // IAM managed policies get their lists sorted at synthesis: compare them sorted.
    expect(withSortedResources(resolveDocument(template, boundary.Statement) as unknown[])).toEqual(
      withSortedResources([
        { Sid: 'CapAtIdentityPolicies', Effect: 'Allow', Action: '*', Resource: '*' },
        ...doorStatements(VEND_ARN, deployers, functionRoles, policyApplication, policyStrategy),
        {
          Sid: 'DenyBoundaryRemoval',
          Effect: 'Deny',
          Action: ['iam:DeleteRolePermissionsBoundary', 'iam:DeleteUserPermissionsBoundary'],
          Resource: '*',
        },
        {
          Sid: 'DenyOtherBoundaries',
          Effect: 'Deny',
          Action: ['iam:PutRolePermissionsBoundary', 'iam:PutUserPermissionsBoundary'],
          Resource: '*',
          Condition: { StringNotEquals: { 'iam:PermissionsBoundary': BOUNDARY_ARN } },
        },
        {
          Sid: 'DenyUnboundedPrincipals',
          Effect: 'Deny',
          Action: ['iam:CreateRole', 'iam:CreateUser'],
          Resource: '*',
          Condition: { StringNotEquals: { 'iam:PermissionsBoundary': BOUNDARY_ARN } },
        },
        {
          Sid: 'DenyBoundaryChanges',
          Effect: 'Deny',
          Action: [
            'iam:CreatePolicyVersion',
            'iam:DeletePolicy',
            'iam:DeletePolicyVersion',
            'iam:SetDefaultPolicyVersion',
          ],
          Resource: BOUNDARY_ARN,
        },
      ]),
    );
    // IAM takes managed policies of at most 6,144 characters: as IAM sees it,
    // references filled in.
    expect(
      JSON.stringify({ ...boundary, Statement: resolveDocument(template, boundary.Statement) })
        .length,
    ).toBeLessThan(6144);
    expect(template.toJSON().Outputs.CallerPermissionsBoundaryArn.Value).toEqual({
      Ref: expect.any(String),
    });
  });

  describe.each([
    ['the service control policy', () => scp],
    ['the permissions boundary', () => boundary],
  ])('%s', (_name, document) => {
    const ask = (principal: string, action: string, resource: string, context = {}) =>
      evaluate(template, document(), { principal, action, resource, context });

    it('denies invoking vend, a version or an alias directly, without the URL', () => {
      for (const resource of [VEND_ARN, `${VEND_ARN}:live`, `${VEND_ARN}:7`]) {
        expect(ask(CALLER, 'lambda:InvokeFunction', resource)).toBe('denied');
        expect(
          ask(CALLER, 'lambda:InvokeFunction', resource, { 'lambda:InvokedViaFunctionUrl': false }),
        ).toBe('denied');
        // The deployment role, too: nobody may hand vend an identity.
        expect(ask(DEPLOYMENT_ROLE, 'lambda:InvokeFunction', resource)).toBe('denied');
      }
    });

    it('leaves an invocation through the URL to the other policies', () => {
      const decision = ask(CALLER, 'lambda:InvokeFunction', VEND_ARN, {
        'lambda:InvokedViaFunctionUrl': true,
      });
      expect(decision).not.toBe('denied');
      expect(ask(CALLER, 'lambda:InvokeFunctionUrl', VEND_ARN)).not.toBe('denied');
    });

    it('leaves invoking the other functions alone', () => {
      const admin = `arn:aws:lambda:${REGION}:${ACCOUNT}:function:token-vending-example-admin`;
      expect(ask(CALLER, 'lambda:InvokeFunction', admin)).not.toBe('denied');
    });

    it("denies changes to vend's code, configuration, URL and permissions to all but the deployment role", () => {
      for (const action of [
        'lambda:UpdateFunctionCode',
        'lambda:UpdateFunctionConfiguration',
        'lambda:UpdateFunctionUrlConfig',
        'lambda:DeleteFunctionUrlConfig',
        'lambda:CreateFunctionUrlConfig',
        'lambda:AddPermission',
        'lambda:RemovePermission',
        'lambda:UpdateAlias',
        'lambda:PublishVersion',
        'lambda:DeleteFunction',
        'lambda:PutFunctionConcurrency',
      ]) {
        expect(ask(CALLER, action, VEND_ARN)).toBe('denied');
        for (const deployer of deployers)
          expect(ask(deployer, action, VEND_ARN)).not.toBe('denied');
      }
      expect(ask(CALLER, 'lambda:GetFunction', VEND_ARN)).not.toBe('denied');
    });
  });

  describe.each([
    ['the service control policy', () => scp],
    ['the permissions boundary', () => boundary],
  ])('%s, beyond vend', (_name, document) => {
    const ask = (principal: string, action: string, resource: string) =>
      evaluate(template, document(), { principal, action, resource });

    it("regression: denies changing any of the stack's functions (refresh reads the provider secret) to all but the deployment role", () => {
      for (const name of ALL_FUNCTIONS) {
        for (const resource of [functionArn(name), `${functionArn(name)}:live`]) {
          expect(ask(CALLER, 'lambda:UpdateFunctionCode', resource)).toBe('denied');
          expect(ask(CALLER, 'lambda:UpdateAlias', resource)).toBe('denied');
          for (const deployer of deployers) {
            expect(ask(deployer, 'lambda:UpdateFunctionCode', resource)).not.toBe('denied');
          }
        }
      }
    });

    it("regression: denies passing a function's role to other code, trusting others with it or widening it", () => {
      for (const role of functionRoles) {
        for (const action of ROLE_CHANGE_ACTIONS) {
          expect(ask(CALLER, action, role)).toBe('denied');
          expect(ask(DEPLOYMENT_ROLE, action, role)).not.toBe('denied');
        }
      }
      expect(ask(CALLER, 'iam:PassRole', `arn:aws:iam::${ACCOUNT}:role/checkout`)).not.toBe(
        'denied',
      );
    });

    it("denies changing the provider secret's resource policy, or replicating it, to all but the deployment role", () => {
      const secret = SECRET_ARN.replace('??????', 'AbCdEf');
      // Regression (review): a replica, promoted in its region, is a secret of
      // its own whose policy the deny did not name.
      const replica = secret.replace(`:${REGION}:`, ':us-west-2:');
      for (const action of [
        'secretsmanager:PutResourcePolicy',
        'secretsmanager:DeleteResourcePolicy',
        'secretsmanager:ReplicateSecretToRegions',
        'secretsmanager:StopReplicationToReplica',
      ]) {
        for (const resource of [secret, replica]) {
          expect(ask(CALLER, action, resource)).toBe('denied');
          expect(ask(DEPLOYMENT_ROLE, action, resource)).not.toBe('denied');
        }
      }
    });

    it('regression: denies changing the access policy in AppConfig (a version granting oneself every scope, its deployment strategy) to all but the deployment role', () => {
      // Review: a principal with AppConfig write rights (PowerUserAccess) made
      // and deployed a policy granting itself '*', then called the URL.
      const changes: Array<[string, string]> = [
        ['appconfig:CreateHostedConfigurationVersion', '/configurationprofile/p1'],
        ['appconfig:StartDeployment', '/environment/e1'],
        ['appconfig:StopDeployment', '/environment/e1/deployment/3'],
        ['appconfig:UpdateConfigurationProfile', '/configurationprofile/p1'],
        ['appconfig:UpdateEnvironment', '/environment/e1'],
        ['appconfig:CreateExtensionAssociation', ''],
        ['appconfig:DeleteApplication', ''],
        ['appconfig:TagResource', ''],
      ];
      for (const [action, under] of changes) {
        expect(ask(CALLER, action, `${policyApplication}${under}`)).toBe('denied');
        expect(ask(DEPLOYMENT_ROLE, action, `${policyApplication}${under}`)).not.toBe('denied');
      }
      // Reading it, as the functions do, and another application, are left alone.
      for (const action of [
        'appconfig:GetLatestConfiguration',
        'appconfig:GetConfigurationProfile',
      ]) {
        expect(ask(CALLER, action, `${policyApplication}/configurationprofile/p1`)).not.toBe(
          'denied',
        );
      }
      // Nor its deployment strategy, an ARN outside the application: set to
      // all at once with no bake, no later version would be watched for rollback.
      for (const action of [
        'appconfig:UpdateDeploymentStrategy',
        'appconfig:DeleteDeploymentStrategy',
      ]) {
        expect(ask(CALLER, action, policyStrategy)).toBe('denied');
        expect(ask(DEPLOYMENT_ROLE, action, policyStrategy)).not.toBe('denied');
      }
      const other = `arn:aws:appconfig:${REGION}:${ACCOUNT}:application/other`;
      expect(ask(CALLER, 'appconfig:StartDeployment', `${other}/environment/e1`)).not.toBe(
        'denied',
      );
    });
  });

  it("lets the stage's policy editors change the access policy, and nobody else", () => {
    const editor = `arn:aws:iam::${ACCOUNT}:role/ops/token-vending-policy-editor`;
    const { template: other } = synth(stage({ policyEditorArns: [editor] }));
    const scp = JSON.parse(
      resolveValue(other, other.toJSON().Outputs.GuardrailServiceControlPolicy.Value),
    ) as { Statement: unknown[] };
    const application = Object.keys(other.findResources('AWS::AppConfig::Application'))[0];
    const profile = `arn:aws:appconfig:${REGION}:${ACCOUNT}:application/${resolveValue(other, { Ref: application })}/configurationprofile/p1`;
    const ask = (principal: string) =>
      evaluate(other, scp, {
        principal,
        action: 'appconfig:CreateHostedConfigurationVersion',
        resource: profile,
      });

    expect(ask(editor)).not.toBe('denied');
    expect(ask(DEPLOYMENT_ROLE)).not.toBe('denied');
    expect(ask(CALLER)).toBe('denied');
  });

  it('keeps the service control policy within 5,120 characters with the most policy editors a stage may name', () => {
    const editors = Array.from(
      { length: MAX_POLICY_EDITORS },
      (_, i) => `arn:aws:iam::${ACCOUNT}:role/operations/token-vending/policy-editor-${i}`,
    );
    const { template: other } = synth(stage({ policyEditorArns: editors }));
    const scp = resolveValue(other, other.toJSON().Outputs.GuardrailServiceControlPolicy.Value);

    expect(JSON.parse(scp).Statement.at(-1).Condition.ArnNotLike['aws:PrincipalArn']).toEqual(
      expect.arrayContaining(editors),
    );
    // With AppConfig's 7-character ids (the test's stand-ins are longer).
    expect(scp.length).toBeLessThan(5120);
  });

  it('regression: refuses at synth policy editors whose ARNs take the guardrails past the SCP and boundary quotas', () => {
    // Ten IAM Identity Center roles (some 130 characters each, within the
    // count limit) made an SCP of about 5,300 characters, which AWS
    // Organizations refuses, and a boundary over IAM's 6,144, which fails the
    // deploy: the count alone does not bound the size.
    const sso = (i: number) =>
      `arn:aws:iam::${ACCOUNT}:role/aws-reserved/sso.amazonaws.com/ap-southeast-2/AWSReservedSSO_TokenVendingPolicyEdit${i}_0123456789abcdef`;
    const editors = Array.from({ length: MAX_POLICY_EDITORS }, (_, i) => sso(i));

    expect(() => synth(stage({ policyEditorArns: editors }))).toThrow(SynthInputError);
    expect(() => synth(stage({ policyEditorArns: editors }))).toThrow(
      /service control policy could reach \d+ characters once deployed, over the 5120 AWS takes.*permissions boundary could reach \d+ characters once deployed, over the 6144 AWS takes.*policyEditorArns/,
    );
    // As many as fit are taken.
    expect(() => synth(stage({ policyEditorArns: editors.slice(0, 5) }))).not.toThrow();
  });

  it('regression: a bounded principal cannot escape through a role or user it creates without the boundary', () => {
    const ask = (action: string, context: Record<string, string>) =>
      evaluate(template, boundary, {
        principal: CALLER,
        action,
        resource: `arn:aws:iam::${ACCOUNT}:role/escape`,
        context,
      });
    const other = 'arn:aws:iam::aws:policy/AdministratorAccess';

    for (const action of ['iam:CreateRole', 'iam:CreateUser']) {
      expect(ask(action, {})).toBe('denied');
      expect(ask(action, { 'iam:PermissionsBoundary': other })).toBe('denied');
      expect(ask(action, { 'iam:PermissionsBoundary': BOUNDARY_ARN })).not.toBe('denied');
    }
  });

  it('names a secret given by its complete ARN, in any region', () => {
    const arn = `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:provider-AbC123`;
    const { template: other } = synth(stage({ credentialsSecret: arn }));
    const document = JSON.parse(
      resolveValue(other, other.toJSON().Outputs.GuardrailServiceControlPolicy.Value),
    ) as { Statement: Array<{ Sid: string; Resource: unknown }> };

    expect(
      document.Statement.find((s) => s.Sid === 'DenyProviderSecretPolicyOutsideDeployment')
        ?.Resource,
    ).toBe(`arn:aws:secretsmanager:*:${ACCOUNT}:secret:provider-AbC123`);
  });

  it('names the deployment role a stage gives', () => {
    const named = `arn:aws:iam::${ACCOUNT}:role/deploy/token-vending`;
    const { template: other } = synth(stage({ deploymentRoleArn: named }));
    const document = JSON.parse(
      resolveValue(other, other.toJSON().Outputs.GuardrailServiceControlPolicy.Value),
    );

    expect(document.Statement[1].Condition.ArnNotLike['aws:PrincipalArn']).toEqual([
      named,
      expect.stringMatching(/^arn:aws:iam::123456789012:role\/Releases/),
    ]);
  });
});
