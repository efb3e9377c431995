import {
  ArnFormat,
  Aws,
  CfnOutput,
  CfnResource,
  DefaultStackSynthesizer,
  Stack,
  Token,
} from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { SynthInputError } from '../config.js';
import { acknowledgeWildcardAction, acknowledgeWildcardResource } from '../nag.js';

/** AWS Organizations takes SCPs of at most this many characters (Organizations quotas). */
export const SCP_MAX_CHARACTERS = 5120;
/** IAM takes managed policies of at most this many characters, whitespace aside (IAM quotas). */
export const MANAGED_POLICY_MAX_CHARACTERS = 6144;

/**
 * The longest `document` can be once CloudFormation fills in its references:
 * the longest partition (`aws-us-gov`) and region names, a 12-digit account,
 * a role name CloudFormation generates (up to 64 characters), an AppConfig id
 * (up to 7). A synth cannot know the real values, and an SCP or boundary that
 * is too long fails only when the organization attaches it or at the deploy.
 */
export function longestLength(stack: Stack, document: iam.PolicyDocument): number {
  const typeOf = new Map<string, string>();
  for (const construct of stack.node.findAll()) {
    if (construct instanceof CfnResource) {
      typeOf.set(stack.resolve(construct.logicalId) as string, construct.cfnResourceType);
    }
  }
  const partition = 'aws-us-gov';
  const account = '000000000000';
  const region = Token.isUnresolved(stack.region) ? 'ap-southeast-2' : stack.region;
  const widest = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(widest);
    if (node === null || typeof node !== 'object') return node;
    const object = node as Record<string, unknown>;
    if ('Fn::Join' in object) {
      const [delimiter, parts] = object['Fn::Join'] as [string, unknown[]];
      return parts.map((part) => widest(part) as string).join(delimiter);
    }
    if ('Ref' in object) {
      const ref = object.Ref as string;
      if (ref === 'AWS::Partition') return partition;
      if (ref === 'AWS::Region') return region;
      if (ref === 'AWS::AccountId') return account;
      if (typeOf.get(ref)?.startsWith('AWS::AppConfig::')) return 'x'.repeat(7);
    }
    if ('Fn::GetAtt' in object) {
      const [id, attribute] = object['Fn::GetAtt'] as [string, string];
      if (typeOf.get(id) === 'AWS::IAM::Role' && attribute === 'Arn') {
        return `arn:${partition}:iam::${account}:role/${'x'.repeat(64)}`;
      }
    }
    if (Object.keys(object).some((key) => key === 'Ref' || key.startsWith('Fn::'))) {
      throw new Error(`Guardrails: no longest value known for ${JSON.stringify(object)}`);
    }
    return Object.fromEntries(Object.entries(object).map(([k, v]) => [k, widest(v)]));
  };
  return JSON.stringify(widest(stack.resolve(document.toJSON()))).length;
}

/**
 * Changes to a function, its versions, aliases, URL, resource policy,
 * concurrency and tags: everything that could alter what it runs or who may
 * call it. Wildcards keep actions Lambda adds later under these verbs denied.
 */
export const FUNCTION_CHANGE_ACTIONS = [
  'lambda:AddPermission',
  'lambda:Create*',
  'lambda:Delete*',
  'lambda:PublishVersion',
  'lambda:Put*',
  'lambda:RemovePermission',
  'lambda:TagResource',
  'lambda:UntagResource',
  'lambda:Update*',
] as const;

/**
 * The CDK bootstrap's CloudFormation execution role of the stack's account
 * and region (the role `cdk deploy` has CloudFormation act as), with the
 * app's bootstrap qualifier.
 */
export function bootstrapDeploymentRoleArn(scope: Construct): string {
  const stack = Stack.of(scope);
  const qualifier =
    (stack.node.tryGetContext('@aws-cdk/core:bootstrapQualifier') as string | undefined) ??
    DefaultStackSynthesizer.DEFAULT_QUALIFIER;
  return `arn:${Aws.PARTITION}:iam::${stack.account}:role/cdk-${qualifier}-cfn-exec-role-${stack.account}-${stack.region}`;
}

export interface GuardrailsProps {
  readonly stage: string;
  /** The vend function's literal name (`token-vending-<stage>-vend-token`). */
  readonly vendFunctionName: string;
  /**
   * Every function of the stack, vend included: its literal name and its
   * role. Any of them holds something worth stealing or bending (the
   * provider secret, the token or key-job KMS use, the key secrets, the
   * policy check), so none may be changed, nor its role passed to another
   * function or given more, outside deployment.
   */
  readonly functions: ReadonlyArray<{ readonly name: string; readonly roleArn: string }>;
  /**
   * The provider credentials secret as an IAM resource in any region (its
   * replicas keep its name): its resource policy keeps readers to the functions.
   */
  readonly providerSecretArn: string;
  /** Principals that may still change the functions: the deployment role. */
  readonly deploymentPrincipalArns: readonly string[];
  /** The access policy's AppConfig application, and who besides the deployment role may change it. */
  readonly accessPolicy: {
    readonly applicationArn: string;
    /**
     * Its deployment strategy: an ARN of its own (`deploymentstrategy/<id>`),
     * not under the application, whose growth and bake time decide how long
     * a deployment is watched for rollback.
     */
    readonly strategyArn: string;
    readonly editorArns: readonly string[];
  };
}

/**
 * What could open the provider secret to other readers: its resource policy,
 * and a replica in another region, which a promotion
 * (`StopReplicationToReplica`) turns into a secret of its own, policy and all
 * ("Replicate AWS Secrets Manager secrets across Regions", Secrets Manager
 * User Guide). Denied in every region: a replica keeps the secret's name.
 */
export const SECRET_POLICY_ACTIONS = [
  'secretsmanager:DeleteResourcePolicy',
  'secretsmanager:PutResourcePolicy',
  'secretsmanager:ReplicateSecretToRegions',
  'secretsmanager:StopReplicationToReplica',
] as const;

/**
 * Changes to the access policy in AppConfig: a new version, a deployment (or
 * stopping one, a revocation say), the profile's validator, the environment's
 * rollback monitors, the application itself. Whoever can deploy a policy
 * decides who gets tokens, and AppConfig has no resource policy to keep
 * others out. On the application and everything under it
 * (`application/<id>/*`: environments, profiles, versions, deployments), and
 * on its deployment strategy (`deploymentstrategy/<id>`, outside the
 * application: who could update it could deploy every later version all at
 * once, unwatched), the resource types of these actions ("Actions, resources, and condition keys
 * for AWS AppConfig", Service Authorization Reference).
 */
export const ACCESS_POLICY_CHANGE_ACTIONS = [
  'appconfig:Create*',
  'appconfig:Delete*',
  'appconfig:StartDeployment',
  'appconfig:StopDeployment',
  'appconfig:TagResource',
  'appconfig:UntagResource',
  'appconfig:Update*',
] as const;

/**
 * What could give a function's role to other code or widen it: passing it to
 * a function (`iam:PassRole`), trusting others with it, or adding policies.
 */
export const ROLE_CHANGE_ACTIONS = [
  'iam:AttachRolePolicy',
  'iam:DeleteRole',
  'iam:DeleteRolePolicy',
  'iam:DetachRolePolicy',
  'iam:PassRole',
  'iam:PutRolePolicy',
  'iam:UpdateAssumeRolePolicy',
] as const;

/**
 * The guardrails around the vend URL's door, as artifacts of the stack.
 *
 * The vend function takes its caller from the event
 * (`requestContext.authorizer.iam.userArn`), and cannot tell an event the URL
 * made from one a principal handed it through `lambda:Invoke`. Inside the
 * function's account an identity-based policy alone allows that Invoke, and no
 * resource policy can deny it. Two AWS mechanisms can:
 *
 * - a service control policy (AWS Organizations), attached by the
 *   organization's administrators to the stack's account or its OU: it bounds
 *   every principal of those accounts but the management account's;
 * - a permissions boundary, a managed policy this stack creates, set on every
 *   role or user of the account that should call or operate the service
 *   (`iam:PutRolePermissionsBoundary`).
 *
 * Both deny `lambda:InvokeFunction` on the vend function unless the call came
 * through its Function URL. `lambda:InvokedViaFunctionUrl` is a Bool
 * condition key of `lambda:InvokeFunction` that Lambda sets to true for an
 * invocation through the URL ("Control access to Lambda function URLs",
 * docs.aws.amazon.com/lambda/latest/dg/urls-auth.html; "Actions, resources, and
 * condition keys for AWS Lambda" in the Service Authorization Reference). A
 * direct Invoke carries no such key, so the deny uses `BoolIfExists`: absent
 * or false, it applies. Both also deny, to everyone but the deployment
 * principals (`aws:PrincipalArn`, which for a role session is the role's
 * ARN): changes to any of the stack's functions (code, configuration, URL,
 * permissions, aliases); passing a function's role to other code, trusting
 * others with it or giving it more (a function made with vend's role reads
 * the provider secret as vend does); and changing the provider secret's
 * resource policy, which admits only the functions that read it. And they
 * deny changing the access policy in AppConfig to all but the deployment
 * principals and the stage's policy editors.
 *
 * Size limits: an SCP is at most 5,120 characters, a managed policy 6,144
 * (AWS Organizations quotas; IAM quotas); synth refuses a stage whose
 * documents could pass them once deployed (longestLength).
 */
export class Guardrails extends Construct {
  /** The service control policy document (also the stack output `GuardrailServiceControlPolicy`). */
  readonly serviceControlPolicy: iam.PolicyDocument;
  /** The permissions boundary for the account's callers and operators. */
  readonly permissionsBoundary: iam.ManagedPolicy;

  constructor(scope: Construct, id: string, props: GuardrailsProps) {
    super(scope, id);
    const stack = Stack.of(this);
    // A function, and its versions and aliases (`<name>:<qualifier>`).
    const resourcesOf = (name: string): string[] => {
      const arn = stack.formatArn({
        service: 'lambda',
        resource: 'function',
        resourceName: name,
        arnFormat: ArnFormat.COLON_RESOURCE_NAME,
      });
      return [arn, `${arn}:*`];
    };
    const vendResources = resourcesOf(props.vendFunctionName);
    const functionResources = props.functions.flatMap(({ name }) => resourcesOf(name));
    const outsideDeployment = {
      ArnNotLike: { 'aws:PrincipalArn': [...props.deploymentPrincipalArns] },
    };
    const doorStatements = (): iam.PolicyStatement[] => [
      new iam.PolicyStatement({
        sid: 'DenyVendInvokeOutsideItsUrl',
        effect: iam.Effect.DENY,
        actions: ['lambda:InvokeFunction'],
        resources: vendResources,
        conditions: { BoolIfExists: { 'lambda:InvokedViaFunctionUrl': 'false' } },
      }),
      new iam.PolicyStatement({
        sid: 'DenyFunctionChangesOutsideDeployment',
        effect: iam.Effect.DENY,
        actions: [...FUNCTION_CHANGE_ACTIONS],
        resources: functionResources,
        conditions: outsideDeployment,
      }),
      new iam.PolicyStatement({
        sid: 'DenyFunctionRolesOutsideDeployment',
        effect: iam.Effect.DENY,
        actions: [...ROLE_CHANGE_ACTIONS],
        resources: props.functions.map(({ roleArn }) => roleArn),
        conditions: outsideDeployment,
      }),
      new iam.PolicyStatement({
        sid: 'DenyProviderSecretPolicyOutsideDeployment',
        effect: iam.Effect.DENY,
        actions: [...SECRET_POLICY_ACTIONS],
        resources: [props.providerSecretArn],
        conditions: outsideDeployment,
      }),
      new iam.PolicyStatement({
        sid: 'DenyAccessPolicyChangesOutsideEditors',
        effect: iam.Effect.DENY,
        actions: [...ACCESS_POLICY_CHANGE_ACTIONS],
        resources: [
          props.accessPolicy.applicationArn,
          `${props.accessPolicy.applicationArn}/*`,
          props.accessPolicy.strategyArn,
        ],
        conditions: {
          ArnNotLike: {
            'aws:PrincipalArn': [
              ...props.deploymentPrincipalArns,
              ...props.accessPolicy.editorArns,
            ],
          },
        },
      }),
    ];

    this.serviceControlPolicy = new iam.PolicyDocument({ statements: doorStatements() });

    const boundaryName = `token-vending-${props.stage}-caller-boundary`;
    const boundaryArn = stack.formatArn({
      service: 'iam',
      region: '',
      resource: 'policy',
      resourceName: boundaryName,
    });
    this.permissionsBoundary = new iam.ManagedPolicy(this, 'CallerBoundary', {
      managedPolicyName: boundaryName,
      description: `token-vending ${props.stage}: permissions boundary for callers and operators; the vend function only through its URL`,
      statements: [
        // A boundary only caps: the principal's own policies still grant.
        new iam.PolicyStatement({
          sid: 'CapAtIdentityPolicies',
          actions: ['*'],
          resources: ['*'],
        }),
        ...doorStatements(),
        // A bounded principal may not lift or loosen its own boundary.
        new iam.PolicyStatement({
          sid: 'DenyBoundaryRemoval',
          effect: iam.Effect.DENY,
          actions: ['iam:DeleteRolePermissionsBoundary', 'iam:DeleteUserPermissionsBoundary'],
          resources: ['*'],
        }),
        new iam.PolicyStatement({
          sid: 'DenyOtherBoundaries',
          effect: iam.Effect.DENY,
          actions: ['iam:PutRolePermissionsBoundary', 'iam:PutUserPermissionsBoundary'],
          resources: ['*'],
          conditions: { StringNotEquals: { 'iam:PermissionsBoundary': boundaryArn } },
        }),
        // Nor escape it through a principal it makes: a role or user it
        // creates carries this boundary too.
        new iam.PolicyStatement({
          sid: 'DenyUnboundedPrincipals',
          effect: iam.Effect.DENY,
          actions: ['iam:CreateRole', 'iam:CreateUser'],
          resources: ['*'],
          conditions: { StringNotEquals: { 'iam:PermissionsBoundary': boundaryArn } },
        }),
        new iam.PolicyStatement({
          sid: 'DenyBoundaryChanges',
          effect: iam.Effect.DENY,
          actions: [
            'iam:CreatePolicyVersion',
            'iam:DeletePolicy',
            'iam:DeletePolicyVersion',
            'iam:SetDefaultPolicyVersion',
          ],
          resources: [boundaryArn],
        }),
      ],
    });
    acknowledgeWildcardAction(
      this.permissionsBoundary,
      '*',
      'A permissions boundary caps what its principal may do; it grants nothing. Its Allow * leaves the principal what its own policies grant, and the Deny statements carve out the vend function (only through its URL, no changes) and the boundary itself.',
    );
    acknowledgeWildcardResource(
      this.permissionsBoundary,
      '*',
      'The Allow * of a permissions boundary grants nothing by itself (see the Action::* reason); the Deny statements with Resource * deny removing or replacing this boundary on any principal, and creating a role or user without it.',
    );

    // Each principal the guardrails exempt is named in every door statement:
    // long role ARNs (an IAM Identity Center role's is some 130 characters)
    // can take either document past its quota, which would surface only when
    // the organization attaches the SCP or when the deploy creates the boundary.
    const tooLong = [
      ['service control policy', this.serviceControlPolicy, SCP_MAX_CHARACTERS],
      ['permissions boundary', this.permissionsBoundary.document, MANAGED_POLICY_MAX_CHARACTERS],
    ] as const;
    const problems = tooLong.flatMap(([what, document, max]) => {
      const length = longestLength(stack, document);
      return length > max
        ? [
            `the guardrails' ${what} could reach ${length} characters once deployed, over the ${max} AWS takes`,
          ]
        : [];
    });
    if (problems.length > 0) {
      throw new SynthInputError(
        `${problems.join('; ')}: name fewer or shorter policyEditorArns (one role the editors assume), or a shorter deploymentRoleArn`,
      );
    }

    new CfnOutput(this, 'ServiceControlPolicyOutput', {
      key: 'GuardrailServiceControlPolicy',
      description:
        'Service control policy to attach to this account (or its OU): the vend function only through its URL, changed only by the deployment role',
      value: stack.toJsonString(this.serviceControlPolicy.toJSON()),
    });
    new CfnOutput(this, 'BoundaryArnOutput', {
      key: 'CallerPermissionsBoundaryArn',
      description:
        "Permissions boundary to set on this account's roles and users that call or operate the service",
      value: this.permissionsBoundary.managedPolicyArn,
    });
  }
}
