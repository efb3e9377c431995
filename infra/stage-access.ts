/**
 * The stage fields that decide who reaches the vend URL, who may change it,
 * and who administers the cache key: checked once, with every problem named.
 */
import type { AccessPolicy } from '../functions/core/access-policy.js';
import { IAM_PATH_SEGMENT, PARTITION } from '../functions/core/access-policy-schema.js';

/** What a stage file writes about access (part of StageInput). */
export interface StageAccessInput {
  /**
   * Accounts whose principals may call the vend URL. The Function URL's
   * resource policy admits these accounts (and `organizationId`), never
   * single principals, so it stays the same size however many callers the
   * access policy grants; the access policy decides which scopes each gets.
   * Default: the stack's own account, when no `organizationId` is given.
   */
  readonly callerAccounts?: readonly string[];
  /** An AWS Organizations id (`o-...`): every account of the organization may call the URL. */
  readonly organizationId?: string;
  /**
   * The role CloudFormation deploys with: the only principal the guardrails
   * let change the vend function, and the one that may change the cache key's
   * policy. Default: the CDK bootstrap's CloudFormation execution role of the
   * stack's account and region (`cdk-<qualifier>-cfn-exec-role-...`).
   */
  readonly deploymentRoleArn?: string;
  /**
   * Roles that manage the cache key (rotation, tags, disabling, deletion) and
   * can never use it to encrypt or decrypt. Default: none but the deployment role.
   */
  readonly keyAdministratorArns?: readonly string[];
  /**
   * Roles that may change the access policy in AppConfig without a deploy
   * (new versions, deployments, the application's settings). The guardrails
   * deny that to every other principal of the account but the deployment
   * role: whoever can deploy a policy decides who gets tokens. Default: none
   * but the deployment role (the policy changes with a deploy only).
   */
  readonly policyEditorArns?: readonly string[];
}

/** The checked access fields. */
export interface StageAccess {
  /** Empty with an `organizationId`; the stack's own account when both were left out. */
  readonly callerAccounts: readonly string[] | 'own-account';
  readonly organizationId?: string;
  readonly deploymentRoleArn?: string;
  readonly keyAdministratorArns: readonly string[];
  readonly policyEditorArns: readonly string[];
}

export const ACCESS_FIELDS = [
  'callerAccounts',
  'organizationId',
  'deploymentRoleArn',
  'keyAdministratorArns',
  'policyEditorArns',
] as const;

/**
 * At most this many caller accounts: each adds two statements (about 700
 * bytes) to the vend function's resource policy, which Lambda caps at 20 KB
 * (Lambda quotas: "Function resource-based policy 20 KB"). Beyond that, admit
 * the organization.
 */
export const MAX_CALLER_ACCOUNTS = 20;

/**
 * At most this many policy editors: each adds its ARN to the service control
 * policy, which AWS Organizations caps at 5,120 characters (Organizations
 * quotas). Fewer may fit when the ARNs are long: the guardrails measure the
 * documents at synth (infra/constructs/guardrails.ts).
 */
export const MAX_POLICY_EDITORS = 10;

const ACCOUNT_PATTERN = /^\d{12}$/;
/** Organizations ids: `o-` and 10 to 32 lower-case letters or digits (Organizations API reference). */
const ORGANIZATION_PATTERN = /^o-[a-z0-9]{10,32}$/;
/** An IAM role ARN (any partition, as access policies take them), with or without a path. */
const ROLE_ARN_PATTERN = new RegExp(
  `^arn:${PARTITION}:iam::\\d{12}:role/(?:${IAM_PATH_SEGMENT}/)*[\\w+=,.@-]{1,64}$`,
);

const accountOf = (arn: string): string | undefined =>
  /^arn:[^:]+:(?:iam|sts)::(\d{12}):/.exec(arn)?.[1];

/**
 * Checks the access fields of a stage; problems go to `problems`.
 * `stackAccount` is the stage's pinned account, if any: its principals are
 * admitted without being listed.
 */
export function checkAccess(
  input: Readonly<Record<string, unknown>>,
  policy: AccessPolicy | undefined,
  stackAccount: string | undefined,
  problems: string[],
): StageAccess {
  const accounts = input.callerAccounts;
  let callerAccounts: string[] = [];
  if (accounts !== undefined) {
    if (!Array.isArray(accounts)) problems.push('callerAccounts must be an array of account ids');
    else {
      accounts.forEach((account: unknown, index) => {
        if (typeof account !== 'string' || !ACCOUNT_PATTERN.test(account)) {
          problems.push(`callerAccounts[${index}] must be a 12-digit AWS account id`);
        } else if (accounts.indexOf(account) !== index) {
          problems.push(`callerAccounts[${index}] repeats ${account}`);
        }
      });
      if (accounts.length > MAX_CALLER_ACCOUNTS) {
        problems.push(
          `callerAccounts lists ${accounts.length} accounts; at most ${MAX_CALLER_ACCOUNTS} fit in the vend function's 20 KB resource policy (admit the organization with organizationId instead)`,
        );
      }
      callerAccounts = accounts.filter((a): a is string => typeof a === 'string');
    }
  }
  if (Array.isArray(accounts) && accounts.length === 0 && input.organizationId === undefined) {
    problems.push(
      'callerAccounts is empty and no organizationId is given: the URL would admit no caller (leave it out to admit the stack account)',
    );
  }

  const organizationId = input.organizationId;
  if (
    organizationId !== undefined &&
    (typeof organizationId !== 'string' || !ORGANIZATION_PATTERN.test(organizationId))
  ) {
    problems.push('organizationId must be an AWS Organizations id such as o-a1b2c3d4e5');
  }

  const deploymentRoleArn = input.deploymentRoleArn;
  if (
    deploymentRoleArn !== undefined &&
    (typeof deploymentRoleArn !== 'string' || !ROLE_ARN_PATTERN.test(deploymentRoleArn))
  ) {
    problems.push('deploymentRoleArn must be an IAM role ARN');
  }

  const admins = roleArns(input, 'keyAdministratorArns', problems);
  const editors = roleArns(input, 'policyEditorArns', problems);
  if (editors.length > MAX_POLICY_EDITORS) {
    problems.push(
      `policyEditorArns lists ${editors.length} roles; at most ${MAX_POLICY_EDITORS} fit in the service control policy (give them one role to assume)`,
    );
  }
  // AppConfig has no resource policies: only the stack account's principals
  // can change the policy, so an editor of another account is a mistake.
  editors.forEach((arn, index) => {
    const account = accountOf(arn);
    if (stackAccount !== undefined && account !== stackAccount) {
      problems.push(
        `policyEditorArns[${index}] is a role of account ${account}, not of the stack's account ${stackAccount}`,
      );
    }
  });

  // Without an organization, a principal of an account the URL does not
  // admit could never call it: say so now rather than as a 403 in production.
  if (policy && organizationId === undefined && callerAccounts.length > 0) {
    const admitted = new Set([...callerAccounts, ...(stackAccount ? [stackAccount] : [])]);
    for (const principal of policy.principals) {
      const account = accountOf(principal);
      if (account !== undefined && !admitted.has(account)) {
        problems.push(
          `accessPolicy grants ${principal}, whose account ${account} is not in callerAccounts (the URL would refuse it)`,
        );
      }
    }
  }

  return {
    callerAccounts:
      accounts === undefined && organizationId === undefined ? 'own-account' : callerAccounts,
    ...(typeof organizationId === 'string' ? { organizationId } : {}),
    ...(typeof deploymentRoleArn === 'string' ? { deploymentRoleArn } : {}),
    keyAdministratorArns: admins,
    policyEditorArns: editors,
  };
}

/** The role ARNs of list field `name` (default empty); problems go to `problems`. */
function roleArns(
  input: Readonly<Record<string, unknown>>,
  name: string,
  problems: string[],
): string[] {
  const value = input[name] ?? [];
  if (!Array.isArray(value)) {
    problems.push(`${name} must be an array of role ARNs`);
    return [];
  }
  value.forEach((arn: unknown, index) => {
    if (typeof arn !== 'string' || !ROLE_ARN_PATTERN.test(arn)) {
      problems.push(`${name}[${index}] must be an IAM role ARN`);
    }
  });
  return value.filter((arn): arn is string => typeof arn === 'string');
}
