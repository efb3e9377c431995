import * as v from 'valibot';
import { AccessDeniedError, ConfigError } from './errors.js';
import { UNSCOPED_LABEL } from './item-keys.js';

/** The syntax of a business application id used as a scope (docs/vend-api.md). */
export const SCOPE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

const PARTITION = 'aws(?:-cn|-us-gov|-iso(?:-[a-z])?)?';
const ACCOUNT = '\\d{12}';
/** Role or user ARN (with optional path), or an account root. */
const PRINCIPAL_PATTERN = new RegExp(
  `^arn:${PARTITION}:iam::${ACCOUNT}:(?:root|(?:role|user)/(?:[\\w+=,.@-]+/)*[\\w+=,.@-]+)$`,
);

const ScopeName = v.pipe(v.string(), v.regex(SCOPE_PATTERN, 'is not a valid scope name'));

const PolicySchema = v.strictObject({
  scopes: v.array(ScopeName),
  grants: v.array(
    v.strictObject({
      principal: v.pipe(
        v.string(),
        v.regex(
          PRINCIPAL_PATTERN,
          'must be an IAM role ARN, user ARN or arn:aws:iam::<account>:root',
        ),
      ),
      scopes: v.optional(v.array(v.union([v.literal('*'), ScopeName]))),
      unscoped: v.optional(v.boolean()),
    }),
  ),
});

export type AccessPolicyDocument = v.InferOutput<typeof PolicySchema>;

interface ParsedArn {
  partition: string;
  account: string;
  /** 'root', 'role', 'user', 'assumed-role' or 'federated-user'. */
  kind: string;
  /** Role or user name without its path; the role name for assumed roles. */
  name: string;
}

const CALLER_PATTERN = new RegExp(
  `^arn:(${PARTITION}):(iam|sts)::(${ACCOUNT}):(root|role|user|assumed-role|federated-user)(?:/(.+))?$`,
);

function parseArn(arn: string): ParsedArn | undefined {
  const m = CALLER_PATTERN.exec(arn);
  if (!m) return undefined;
  const [, partition = '', service, account = '', kind = '', rest = ''] = m;
  if (kind === 'assumed-role') {
    // arn:aws:sts::<acct>:assumed-role/<name>/<session>: STS drops role paths.
    if (service !== 'sts') return undefined;
    const [name, session] = rest.split('/');
    if (!name || !session) return undefined;
    return { partition, account, kind, name };
  }
  if (kind === 'federated-user') {
    // arn:aws:sts::<acct>:federated-user/<name> (GetFederationToken): one plain name.
    return service === 'sts' && /^[\w+=,.@-]+$/.test(rest)
      ? { partition, account, kind, name: rest }
      : undefined;
  }
  if (service !== 'iam') return undefined;
  if (kind === 'root') return rest ? undefined : { partition, account, kind, name: '' };
  const name = rest.split('/').at(-1);
  return name ? { partition, account, kind, name } : undefined;
}

/** Well-formed grant scopes not listed in `scopes`, read from the raw (maybe invalid) document. */
function unlistedScopes(raw: unknown): string[] {
  if (typeof raw !== 'object' || raw === null) return [];
  const { scopes, grants } = raw as { scopes?: unknown; grants?: unknown };
  if (!Array.isArray(scopes) || !Array.isArray(grants)) return [];
  const listed = new Set<unknown>(scopes);
  const problems: string[] = [];
  grants.forEach((grant: unknown, index) => {
    const granted =
      typeof grant === 'object' && grant !== null ? (grant as { scopes?: unknown }).scopes : [];
    if (!Array.isArray(granted)) return;
    for (const s of granted) {
      if (typeof s === 'string' && SCOPE_PATTERN.test(s) && !listed.has(s)) {
        problems.push(`grants.${index}.scopes: "${s}" is not listed in scopes`);
      }
    }
  });
  return problems;
}

/**
 * Admin events and reports name the unscoped token `unscoped`, so a business
 * application of that name could not be told apart: refused at start.
 */
function reservedScopes(raw: unknown): string[] {
  const scopes =
    typeof raw === 'object' && raw !== null ? (raw as { scopes?: unknown }).scopes : [];
  return Array.isArray(scopes) && scopes.includes(UNSCOPED_LABEL)
    ? [`scopes: "${UNSCOPED_LABEL}" is reserved for the unscoped token in admin events and reports`]
    : [];
}

interface Grant {
  readonly principal: string;
  readonly parsed: ParsedArn;
  readonly scopes: ReadonlySet<string>;
  readonly unscoped: boolean;
}

function grantMatches(grant: Grant, callerArn: string, caller: ParsedArn): boolean {
  const g = grant.parsed;
  if (g.partition !== caller.partition || g.account !== caller.account) return false;
  switch (g.kind) {
    case 'root':
      // Any principal of the account, federated users included.
      return true;
    case 'role':
      // A role matches its assumed-role sessions whatever the role's path.
      return (caller.kind === 'assumed-role' || caller.kind === 'role') && caller.name === g.name;
    default:
      return grant.principal === callerArn;
  }
}

/** The parsed access policy (docs/configuration.md): default deny. */
export class AccessPolicy {
  readonly scopes: ReadonlySet<string>;
  readonly principals: readonly string[];
  readonly #grants: readonly Grant[];

  private constructor(scopes: ReadonlySet<string>, grants: readonly Grant[]) {
    this.scopes = scopes;
    this.#grants = grants;
    this.principals = [...new Set(grants.map((g) => g.principal))];
  }

  /** Parses and checks a policy; every problem is reported at once in a ConfigError. */
  static parse(json: string, source = 'ACCESS_POLICY'): AccessPolicy {
    let raw: unknown;
    try {
      raw = JSON.parse(json);
    } catch {
      throw new ConfigError(`${source} is not valid JSON`);
    }
    const result = v.safeParse(PolicySchema, raw);
    // Shape problems and unlisted scopes are reported together, in one message.
    const problems = [
      ...(result.issues ?? []).map((i) => `${v.getDotPath(i) ?? '(root)'}: ${i.message}`),
      ...unlistedScopes(raw),
      ...reservedScopes(raw),
    ];
    if (!result.success || problems.length > 0) {
      throw new ConfigError(`${source} is invalid: ${problems.join('; ')}`);
    }
    const doc = result.output;
    const scopes = new Set(doc.scopes);
    const grants = doc.grants.map(
      (g): Grant => ({
        principal: g.principal,
        parsed: parseArn(g.principal) as ParsedArn,
        scopes: g.scopes?.includes('*') ? scopes : new Set(g.scopes ?? []),
        unscoped: g.unscoped === true,
      }),
    );
    return new AccessPolicy(scopes, grants);
  }

  /** True when `callerArn` may receive `scope` (undefined: the unscoped token). */
  allows(callerArn: string, scope: string | undefined): boolean {
    if (scope !== undefined && !this.scopes.has(scope)) return false;
    const caller = parseArn(callerArn);
    if (!caller) return false;
    return this.#grants.some(
      (g) =>
        grantMatches(g, callerArn, caller) &&
        (scope === undefined ? g.unscoped : g.scopes.has(scope)),
    );
  }

  /** Throws access_denied unless allowed; unconfigured scopes get the same answer. */
  authorize(callerArn: string, scope: string | undefined): void {
    if (!this.allows(callerArn, scope)) {
      throw new AccessDeniedError(
        scope === undefined
          ? 'The caller is not granted the unscoped token.'
          : 'The caller is not granted this scope.',
      );
    }
  }
}
