/**
 * The callers the local Function URL knows, standing in for IAM principals:
 * the demo identity, or `LOCAL_IDENTITIES` from the environment, and the grants
 * the local stack's default access policy gives them.
 */

import * as v from 'valibot';
import {
  ACCOUNT,
  IAM_NAME,
  PARTITION,
  PRINCIPAL_PATTERN,
} from '../functions/core/access-policy-schema.js';
import type { Env, EnvReader } from '../functions/core/config.js';

export interface LocalIdentity {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /**
   * Temporary credentials only: every request must carry it in
   * `X-Amz-Security-Token`, as AWS requires.
   */
  readonly sessionToken?: string;
  /** The IAM principal this key stands for (`requestContext.authorizer.iam.userArn`). */
  readonly arn: string;
}

/**
 * The identity the local stack knows by default (not a real AWS key). Its ARN
 * is what a real Function URL passes for a role session: an STS assumed-role
 * ARN. Long-term style key (no session token), so `curl --aws-sigv4` and
 * scripts reading `.local/stack.json` sign with the key and secret alone.
 */
export const DEMO_IDENTITY: LocalIdentity = Object.freeze({
  accessKeyId: 'AKIALOCALDEMO0000001',
  secretAccessKey: 'localDemoSecretAccessKey0000000000000000',
  arn: 'arn:aws:sts::000000000000:assumed-role/local-demo/local-demo-session',
});

const IdentitiesSchema = v.pipe(
  v.array(
    v.strictObject(
      {
        accessKeyId: v.pipe(
          v.string('must be a string'),
          v.regex(/^[A-Z0-9]{16,128}$/, 'must be 16 to 128 of A-Z 0-9, as AWS access key ids are'),
        ),
        secretAccessKey: v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty')),
        sessionToken: v.optional(
          v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty')),
        ),
        arn: v.pipe(v.string('must be a string'), v.startsWith('arn:', 'must be an ARN')),
      },
      (issue) =>
        issue.expected === 'never'
          ? 'is not a field (accessKeyId, secretAccessKey, sessionToken, arn)'
          : issue.received === 'undefined'
            ? 'is required'
            : 'must be an object {"accessKeyId","secretAccessKey","arn"}',
    ),
  ),
  v.minLength(1, 'must list at least one identity'),
);

/** `LOCAL_IDENTITIES[1].arn`, from a valibot issue's path. */
function where(issue: v.BaseIssue<unknown>): string {
  const path = (issue.path ?? []).map((item) =>
    typeof item.key === 'number' ? `[${item.key}]` : `.${String(item.key)}`,
  );
  return `LOCAL_IDENTITIES${path.join('')}`;
}

/**
 * `LOCAL_IDENTITIES` (JSON `[{"accessKeyId","secretAccessKey","arn"}]`, each
 * with an optional `"sessionToken"`), or the demo identity when unset. Problems
 * go to `reader` and never quote a value.
 */
export function readLocalIdentities(reader: EnvReader, env: Env): LocalIdentity[] {
  const raw = env.LOCAL_IDENTITIES;
  if (raw === undefined || raw === '') return [DEMO_IDENTITY];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    reader.problem('LOCAL_IDENTITIES is not valid JSON');
    return [DEMO_IDENTITY];
  }
  if (!Array.isArray(parsed)) {
    reader.problem(
      'LOCAL_IDENTITIES must be a JSON array of {"accessKeyId","secretAccessKey","arn"} ' +
        'with an optional non-empty "sessionToken"',
    );
    return [DEMO_IDENTITY];
  }
  const result = v.safeParse(IdentitiesSchema, parsed);
  if (!result.success) {
    // Where and what, never the value (it may be a secret).
    for (const issue of result.issues) reader.problem(`${where(issue)} ${issue.message}`);
    return [DEMO_IDENTITY];
  }
  // The local URL finds a caller by its access key id: a second entry with the
  // same id could never sign a request.
  const first = new Map<string, number>();
  result.output.forEach((identity, index) => {
    const earlier = first.get(identity.accessKeyId);
    if (earlier === undefined) first.set(identity.accessKeyId, index);
    else {
      reader.problem(
        `LOCAL_IDENTITIES[${index}].accessKeyId repeats LOCAL_IDENTITIES[${earlier}]'s: each identity needs its own`,
      );
    }
  });
  return result.output;
}

const ASSUMED_ROLE = new RegExp(
  `^arn:(${PARTITION}):sts::(${ACCOUNT}):assumed-role/(${IAM_NAME})/${IAM_NAME}$`,
);

/**
 * The IAM principal an access policy grant names for a caller ARN: an STS
 * assumed-role session maps to its role (`arn:aws:iam::<acct>:role/<name>`);
 * role, user and root ARNs are principals already. Undefined for anything else.
 */
export function policyPrincipal(arn: string): string | undefined {
  const session = ASSUMED_ROLE.exec(arn);
  if (session) {
    const [, partition, account, role] = session;
    return `arn:${partition}:iam::${account}:role/${role}`;
  }
  return PRINCIPAL_PATTERN.test(arn) ? arn : undefined;
}

/**
 * The local stack's access policy when `ACCESS_POLICY` is unset: every local
 * identity is granted every one of `scopes` and the unscoped token. An
 * identity whose ARN maps to no IAM principal is reported through `reader`.
 */
export function defaultAccessPolicy(
  reader: EnvReader,
  identities: readonly LocalIdentity[],
  scopes: readonly string[],
): string {
  const principals = new Set<string>();
  identities.forEach((identity, index) => {
    const principal = policyPrincipal(identity.arn);
    if (principal === undefined) {
      reader.problem(
        `LOCAL_IDENTITIES[${index}].arn is not an IAM role, user or root ARN nor an STS ` +
          'assumed-role ARN, so the default access policy cannot grant it: set ACCESS_POLICY',
      );
    } else {
      principals.add(principal);
    }
  });
  return JSON.stringify({
    scopes,
    grants: [...principals].map((principal) => ({ principal, scopes: ['*'], unscoped: true })),
  });
}
