import * as v from 'valibot';
import { AccessDeniedError, ConfigError } from './errors.js';
import { UNSCOPED_LABEL } from './item-keys.js';

/** The syntax of a business application id used as a scope. */
export const SCOPE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

const PARTITION = 'aws(?:-cn|-us-gov|-iso(?:-[a-z])?)?';
const ACCOUNT = '\\d{12}';
/** Role or user ARN (with optional path), or an account root. */
const PRINCIPAL_PATTERN = new RegExp(
  `^arn:${PARTITION}:iam::${ACCOUNT}:(?:root|(?:role|user)/(?:[\\w+=,.@-]+/)*[\\w+=,.@-]+)$`,
);

const ScopeName = v.pipe(v.string(), v.regex(SCOPE_PATTERN, 'is not a valid scope name'));

const GrantSchema = v.strictObject({
  principal: v.pipe(
    v.string(),
    v.regex(PRINCIPAL_PATTERN, 'must be an IAM role ARN, user ARN or arn:aws:iam::<account>:root'),
  ),
  scopes: v.optional(v.array(v.union([v.literal('*'), ScopeName]))),
  unscoped: v.optional(v.boolean()),
});

const PolicySchema = v.strictObject({
  scopes: v.array(ScopeName),
  grants: v.array(GrantSchema),
  /**
   * The business applications the scheduled key-issuing job covers (their ids
   * share the scope syntax; they need not be token scopes).
   */
  keyIssuing: v.optional(v.strictObject({ businessApplicationIds: v.array(ScopeName) })),
});

export type AccessPolicyDocument = v.InferOutput<typeof PolicySchema>;
export type AccessGrant = v.InferOutput<typeof GrantSchema>;

export interface ParseOptions {
  /** Names the document in error messages. Default `ACCESS_POLICY`. */
  readonly source?: string;
  /**
   * Grants every loaded document gets besides its own, from the deployment
   * (the key-issuing job's role, granted `unscoped`), so no edit of the
   * document can lock the job out.
   */
  readonly fixedGrants?: readonly AccessGrant[];
}

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

/** Key-issuing ids listed twice (the job would run one id twice). */
function repeatedKeyIssuingIds(raw: unknown): string[] {
  const keyIssuing =
    typeof raw === 'object' && raw !== null ? (raw as { keyIssuing?: unknown }).keyIssuing : {};
  const ids =
    typeof keyIssuing === 'object' && keyIssuing !== null
      ? (keyIssuing as { businessApplicationIds?: unknown }).businessApplicationIds
      : [];
  if (!Array.isArray(ids)) return [];
  return ids.flatMap((id: unknown, index) =>
    typeof id === 'string' && ids.indexOf(id) !== index
      ? [`keyIssuing.businessApplicationIds.${index}: "${id.slice(0, 128)}" is listed twice`]
      : [],
  );
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

/** What the grants of one principal key give together. */
interface Granted {
  /** Every scope of the policy when a grant says `"*"`. */
  all: boolean;
  readonly scopes: Set<string>;
  unscoped: boolean;
}

/**
 * The index key a grant is filed under, so a caller finds its grants with at
 * most three lookups whatever the policy's size:
 * - `root`: any principal of that partition and account, federated users included;
 * - `role`: the role by name, matching its assumed-role sessions whatever its
 *   path (STS drops role paths);
 * - `user`: the exact ARN.
 */
function grantKey(grant: ParsedArn, principal: string): string {
  switch (grant.kind) {
    case 'root':
      return `root:${grant.partition}:${grant.account}`;
    case 'role':
      return `role:${grant.partition}:${grant.account}:${grant.name}`;
    default:
      return `arn:${principal}`;
  }
}

/** The keys a caller's grants may be filed under (see `grantKey`). */
function callerKeys(caller: ParsedArn, callerArn: string): string[] {
  const keys = [`root:${caller.partition}:${caller.account}`, `arn:${callerArn}`];
  if (caller.kind === 'role' || caller.kind === 'assumed-role') {
    keys.push(`role:${caller.partition}:${caller.account}:${caller.name}`);
  }
  return keys;
}

/** The parsed access policy: default deny, grants indexed by principal at load. */
export class AccessPolicy {
  readonly scopes: ReadonlySet<string>;
  readonly principals: readonly string[];
  /** The ids the scheduled key-issuing job covers; undefined when the document lists none. */
  readonly keyIssuingIds: readonly string[] | undefined;
  readonly #index: ReadonlyMap<string, Granted>;

  private constructor(
    scopes: ReadonlySet<string>,
    grants: readonly AccessGrant[],
    keyIssuingIds: readonly string[] | undefined,
  ) {
    this.scopes = scopes;
    this.keyIssuingIds = keyIssuingIds;
    this.principals = [...new Set(grants.map((g) => g.principal))];
    const index = new Map<string, Granted>();
    for (const grant of grants) {
      const key = grantKey(parseArn(grant.principal) as ParsedArn, grant.principal);
      let granted = index.get(key);
      if (!granted) {
        granted = { all: false, scopes: new Set(), unscoped: false };
        index.set(key, granted);
      }
      for (const scope of grant.scopes ?? []) {
        if (scope === '*') granted.all = true;
        else granted.scopes.add(scope);
      }
      if (grant.unscoped === true) granted.unscoped = true;
    }
    this.#index = index;
  }

  /**
   * Parses and checks a policy document; every problem is reported at once in
   * a ConfigError. The deploy-time validator, the functions at load and
   * `tvm policy validate` all run this same check.
   */
  static parse(json: string, options: ParseOptions | string = {}): AccessPolicy {
    const { source = 'ACCESS_POLICY', fixedGrants = [] } =
      typeof options === 'string' ? { source: options } : options;
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
      ...repeatedKeyIssuingIds(raw),
    ];
    if (!result.success || problems.length > 0) {
      throw new ConfigError(`${source} is invalid: ${problems.join('; ')}`);
    }
    const doc = result.output;
    fixedGrants.forEach((grant, index) => {
      if (!v.is(GrantSchema, grant)) {
        throw new ConfigError(`${source}: fixed grant ${index} is invalid`);
      }
    });
    return new AccessPolicy(
      new Set(doc.scopes),
      [...doc.grants, ...fixedGrants],
      doc.keyIssuing?.businessApplicationIds,
    );
  }

  /** True when `callerArn` may receive `scope` (undefined: the unscoped token). */
  allows(callerArn: string, scope: string | undefined): boolean {
    if (scope !== undefined && !this.scopes.has(scope)) return false;
    const caller = parseArn(callerArn);
    if (!caller) return false;
    for (const key of callerKeys(caller, callerArn)) {
      const granted = this.#index.get(key);
      if (!granted) continue;
      if (scope === undefined ? granted.unscoped : granted.all || granted.scopes.has(scope)) {
        return true;
      }
    }
    return false;
  }

  /** What `callerArn` is granted: the scopes (sorted) and whether the unscoped token. */
  grantsOf(callerArn: string): { scopes: string[]; unscoped: boolean } {
    const caller = parseArn(callerArn);
    const scopes = new Set<string>();
    let unscoped = false;
    if (caller) {
      for (const key of callerKeys(caller, callerArn)) {
        const granted = this.#index.get(key);
        if (!granted) continue;
        for (const scope of granted.all ? this.scopes : granted.scopes) scopes.add(scope);
        unscoped ||= granted.unscoped;
      }
    }
    return { scopes: [...scopes].sort(), unscoped };
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
