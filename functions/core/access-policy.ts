import * as v from 'valibot';
import {
  ACCOUNT,
  type AccessGrant,
  checkPolicyDocument,
  GrantSchema,
  IAM_NAME,
  PARTITION,
} from './access-policy-schema.js';
import { AccessDeniedError, ConfigError, PolicyInvalidError } from './errors.js';

/**
 * The largest document AppConfig's hosted configuration store takes
 * ("Configurations must be 1 MB or smaller", AWS::AppConfig::HostedConfigurationVersion,
 * CloudFormation Template Reference): a larger one could never deploy, so
 * every place that checks a document (the local stack's file included)
 * refuses it alike.
 */
export const MAX_POLICY_BYTES = 1024 * 1024;

export type { AccessGrant, AccessPolicyDocument } from './access-policy-schema.js';
export { SCOPE_PATTERN } from './access-policy-schema.js';

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

const IAM_NAME_ONLY = new RegExp(`^${IAM_NAME}$`);

/** `line L, column C` (from 1) of offset `at` in `text`. */
function lineAndColumn(text: string, at: number): string {
  const before = text.slice(0, at);
  const line = before.split('\n').length;
  return `line ${line}, column ${at - before.lastIndexOf('\n')}`;
}

const CALLER_PATTERN = new RegExp(
  `^arn:(${PARTITION}):(iam|sts)::(${ACCOUNT}):(root|role|user|assumed-role|federated-user)(?:/(.+))?$`,
);

function parseArn(arn: string): ParsedArn | undefined {
  const m = CALLER_PATTERN.exec(arn);
  if (!m) return undefined;
  const [, partition = '', service, account = '', kind = '', rest = ''] = m;
  if (kind === 'assumed-role') {
    // arn:aws:sts::<acct>:assumed-role/<name>/<session>: STS drops role
    // paths, so exactly a name and a session, each of IAM's name characters.
    if (service !== 'sts') return undefined;
    const parts = rest.split('/');
    const [name] = parts;
    if (parts.length !== 2 || !name || !parts.every((part) => IAM_NAME_ONLY.test(part))) {
      return undefined;
    }
    return { partition, account, kind, name };
  }
  if (kind === 'federated-user') {
    // arn:aws:sts::<acct>:federated-user/<name> (GetFederationToken): one plain name.
    return service === 'sts' && IAM_NAME_ONLY.test(rest)
      ? { partition, account, kind, name: rest }
      : undefined;
  }
  if (service !== 'iam') return undefined;
  if (kind === 'root') return rest ? undefined : { partition, account, kind, name: '' };
  const name = rest.split('/').at(-1);
  return name ? { partition, account, kind, name } : undefined;
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
    } catch (error) {
      // Where, not what: the parser's message may quote the document.
      // The parser's own words end in " in JSON at position N"; text it quotes
      // from the document comes before them.
      const at = / in JSON at position (\d+)(?: \(line \d+ column \d+\))?$/.exec(
        String((error as Error).message),
      );
      const offset = at ? Math.min(Number(at[1]), json.length) : undefined;
      throw new ConfigError(
        `${source} is not valid JSON${offset === undefined ? '' : ` (${lineAndColumn(json, offset)})`}`,
      );
    }
    const checked = checkPolicyDocument(raw);
    const bytes = Buffer.byteLength(json, 'utf8');
    const tooLarge =
      bytes > MAX_POLICY_BYTES
        ? [
            `(document): ${bytes} bytes, over the ${MAX_POLICY_BYTES} bytes AppConfig's hosted configuration store takes`,
          ]
        : [];
    // Every problem, in one message.
    if ('problems' in checked)
      throw new PolicyInvalidError(source, [...tooLarge, ...checked.problems]);
    if (tooLarge.length > 0) throw new PolicyInvalidError(source, tooLarge);
    const doc = checked.document;
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
