/**
 * The access policy document's schema and checks: what AccessPolicy.parse,
 * and through it the AppConfig validator, the functions at load and
 * `tvm policy validate`, accept. Every problem is named with its path.
 *
 * A document is checked twice only when it fails: a fast pass checks each
 * list of names with one predicate call per list (valibot's per-element
 * datasets made a 10,000-scope policy take over 100 ms to check at a cold
 * start), and a failing document goes through the per-element schema, built
 * from the same predicates, which names every bad element.
 */
import * as v from 'valibot';
import { UNSCOPED_LABEL } from './item-keys.js';

/** The syntax of a business application id used as a scope. */
export const SCOPE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/**
 * ARN parts, as regular expression sources. A partition is `aws` or
 * `aws-<name>` (aws-cn, aws-us-gov, aws-iso-b, aws-eusc...): one pattern for
 * grants, callers and the local identities, so a partition AWS adds is taken
 * alike everywhere.
 */
export const PARTITION = 'aws(?:-[a-z]+)*';
export const ACCOUNT = '\\d{12}';
/** A role, user or session name (IAM's name characters). */
export const IAM_NAME = '[\\w+=,.@-]+';
/**
 * A path segment of a role or user: IAM paths may hold any ASCII character
 * from `!` through DEL ("IAM identifiers", IAM User Guide), here without the
 * `/` that separates them.
 */
export const IAM_PATH_SEGMENT = '[\\x21-\\x2e\\x30-\\x7f]+';
/** Role or user ARN (with optional path), or an account root: a grant's principal. */
export const PRINCIPAL_PATTERN = new RegExp(
  `^arn:${PARTITION}:iam::${ACCOUNT}:(?:root|(?:role|user)/(?:${IAM_PATH_SEGMENT}/)*${IAM_NAME})$`,
);

const isScopeName = (input: unknown): input is string =>
  typeof input === 'string' && SCOPE_PATTERN.test(input);
const isGrantScope = (input: unknown): input is string => input === '*' || isScopeName(input);

const ScopeName = v.pipe(v.string(), v.regex(SCOPE_PATTERN, 'is not a valid scope name'));
const GrantScope = v.union([v.literal('*'), ScopeName]);

/** How a list of names is checked: per element (naming each bad one), or in one pass. */
type ListSchema = <T extends string>(
  item: v.GenericSchema<unknown, T>,
  accepts: (input: unknown) => input is T,
) => v.GenericSchema<unknown, T[]>;

const perElement: ListSchema = (item) => v.array(item);
const onePass: ListSchema = <T extends string>(
  _item: v.GenericSchema<unknown, T>,
  accepts: (input: unknown) => input is T,
) => v.custom<T[]>((input) => Array.isArray(input) && input.every(accepts));

function grantSchema(list: ListSchema) {
  return v.strictObject({
    principal: v.pipe(
      v.string(),
      v.regex(
        PRINCIPAL_PATTERN,
        'must be an IAM role ARN, user ARN or arn:<partition>:iam::<account>:root',
      ),
    ),
    scopes: v.optional(list(GrantScope, isGrantScope)),
    unscoped: v.optional(v.boolean()),
  });
}

function policySchema(list: ListSchema) {
  return v.strictObject({
    scopes: list(ScopeName, isScopeName),
    grants: v.array(grantSchema(list)),
    /**
     * The business applications the scheduled key-issuing job covers (their ids
     * share the scope syntax; they need not be token scopes).
     */
    keyIssuing: v.optional(
      v.strictObject({ businessApplicationIds: list(ScopeName, isScopeName) }),
    ),
  });
}

export const GrantSchema = grantSchema(perElement);
const DetailedPolicySchema = policySchema(perElement);
const FastPolicySchema = policySchema(onePass);

export type AccessPolicyDocument = v.InferOutput<typeof DetailedPolicySchema>;
export type AccessGrant = v.InferOutput<typeof GrantSchema>;

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
      if (isScopeName(s) && !listed.has(s)) {
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
  const seen = new Set<unknown>();
  return ids.flatMap((id: unknown, index) => {
    if (typeof id !== 'string' || !seen.has(id)) {
      seen.add(id);
      return [];
    }
    const first = ids.indexOf(id);
    // Named when it is an id; anything else only by where it is.
    return isScopeName(id)
      ? [`keyIssuing.businessApplicationIds.${index}: "${id}" is listed twice`]
      : [`keyIssuing.businessApplicationIds.${index}: repeats businessApplicationIds.${first}`];
  });
}

/**
 * Admin events and reports name the unscoped token `unscoped`, so a business
 * application of that name could not be told apart: refused.
 */
function reservedScopes(raw: unknown): string[] {
  const scopes =
    typeof raw === 'object' && raw !== null ? (raw as { scopes?: unknown }).scopes : [];
  return Array.isArray(scopes) && scopes.includes(UNSCOPED_LABEL)
    ? [`scopes: "${UNSCOPED_LABEL}" is reserved for the unscoped token in admin events and reports`]
    : [];
}

/**
 * An issue as a problem: its path and what was expected. valibot's own
 * messages end with what they received ("... but received \"...\""), a value
 * of the document: cut, so no value reaches a log or splits one problem into
 * several. Our own messages (the regex checks) quote nothing.
 */
function describeIssue(issue: v.BaseIssue<unknown>): string {
  const keys = (issue.path ?? []).map((item) => String(item.key));
  // An unknown field's path ends in its name, a key of the document: named by
  // where it is, not by itself.
  if (issue.expected === 'never' && keys.length > 0) {
    return `${keys.slice(0, -1).join('.') || '(root)'}: has a field it does not take`;
  }
  // The first: what was expected comes from the schema, and never holds it.
  const at = issue.message.indexOf(' but received ');
  return `${keys.join('.') || '(root)'}: ${at === -1 ? issue.message : issue.message.slice(0, at)}`;
}

/**
 * The document if every check passes, else every problem: shape problems with
 * their paths, then grant scopes not listed in `scopes`, the reserved scope
 * name and repeated key-issuing ids.
 */
export function checkPolicyDocument(
  raw: unknown,
): { readonly document: AccessPolicyDocument } | { readonly problems: string[] } {
  const fast = v.safeParse(FastPolicySchema, raw);
  const problems = [
    // Only a document that failed the fast pass needs the per-element one.
    ...(fast.success
      ? []
      : (v.safeParse(DetailedPolicySchema, raw).issues ?? []).map(describeIssue)),
    ...unlistedScopes(raw),
    ...reservedScopes(raw),
    ...repeatedKeyIssuingIds(raw),
  ];
  return fast.success && problems.length === 0
    ? { document: fast.output as AccessPolicyDocument }
    : { problems };
}
