/**
 * A small evaluator of the IAM policy language, enough to ask a synthesized
 * policy (a key policy, a service control policy, a permissions boundary)
 * "is this request allowed?" the way AWS decides it for one policy: an
 * explicit Deny wins, then an Allow, else denied by default. It knows the
 * condition operators this project's policies use, and `...IfExists`.
 * CloudFormation values are resolved first (support/infra.ts `resolveValue`).
 */
import type { Template } from 'aws-cdk-lib/assertions';
import { resolveValue } from './infra.js';

export interface PolicyRequest {
  /** The calling principal's ARN (a role ARN), or a service principal such as `dynamodb.amazonaws.com`. */
  readonly principal: string;
  readonly action: string;
  /** Default `*` (key policies name no other resource). */
  readonly resource?: string;
  /** Request context keys; an absent key is left out. */
  readonly context?: Readonly<Record<string, string | boolean>>;
}

export type Decision = 'allowed' | 'denied' | 'implicitly denied';

interface RawStatement {
  readonly Effect: 'Allow' | 'Deny';
  readonly Principal?: unknown;
  readonly Action: unknown;
  readonly Resource: unknown;
  readonly Condition?: Record<string, Record<string, unknown>>;
}

const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : [value]);

/** IAM wildcards: `*` any run of characters, `?` one character; case-insensitive for actions. */
function like(pattern: string, value: string, ignoreCase = false): boolean {
  const source = pattern
    .split('')
    .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`, ignoreCase ? 'i' : '').test(value);
}

function conditionHolds(
  operator: string,
  key: string,
  expected: string[],
  context: Readonly<Record<string, string | boolean>>,
): boolean {
  const ifExists = operator.endsWith('IfExists');
  const base = ifExists ? operator.slice(0, -'IfExists'.length) : operator;
  const [qualifier, op] = base.includes(':') ? base.split(':') : [undefined, base];
  const raw = Object.hasOwn(context, key) ? context[key] : undefined;
  if (raw === undefined) {
    if (ifExists) return true;
    // A negated operator on a missing key matches (IAM's documented behaviour).
    return qualifier === undefined && /Not/.test(op as string);
  }
  const actual = String(raw);
  switch (op) {
    case 'StringEquals':
    case 'ArnEquals':
      return expected.includes(actual);
    case 'StringNotEquals':
    case 'ArnNotEquals':
      return !expected.includes(actual);
    case 'StringLike':
    case 'ArnLike':
      return expected.some((p) => like(p, actual));
    case 'StringNotLike':
    case 'ArnNotLike':
      return !expected.some((p) => like(p, actual));
    case 'Bool':
      return expected.includes(actual);
    default:
      throw new Error(`the evaluator does not know the operator ${operator}`);
  }
}

/** Evaluates `request` against the statements of one policy document. */
export function evaluate(
  template: Template,
  document: { Statement: unknown[] },
  request: PolicyRequest,
): Decision {
  const resolve = (value: unknown): string => resolveValue(template, value);
  // `aws:PrincipalArn` is in every request context of an IAM principal.
  const context = {
    ...(request.principal.startsWith('arn:') ? { 'aws:PrincipalArn': request.principal } : {}),
    ...request.context,
  };
  const resource = request.resource ?? '*';
  const matches = (statement: RawStatement): boolean => {
    if (statement.Principal !== undefined) {
      const principal = statement.Principal as Record<string, unknown> | string;
      const named =
        principal === '*'
          ? ['*']
          : Object.values(principal as Record<string, unknown>).flatMap((v) =>
              list(v).map(resolve),
            );
      if (!named.some((p) => p === '*' || p === request.principal)) return false;
    }
    if (!list(statement.Action).some((a) => like(resolve(a), request.action, true))) return false;
    if (!list(statement.Resource).some((r) => like(resolve(r), resource))) return false;
    for (const [operator, entries] of Object.entries(statement.Condition ?? {})) {
      for (const [key, values] of Object.entries(entries)) {
        if (!conditionHolds(operator, key, list(values).map(resolve), context)) return false;
      }
    }
    return true;
  };
  const statements = document.Statement as RawStatement[];
  if (statements.some((s) => s.Effect === 'Deny' && matches(s))) return 'denied';
  if (statements.some((s) => s.Effect === 'Allow' && matches(s))) return 'allowed';
  return 'implicitly denied';
}

/** A policy document with every CloudFormation value in it resolved (support/infra.ts `resolveValue`). */
export function resolveDocument(template: Template, node: unknown): unknown {
  if (Array.isArray(node)) return node.map((item) => resolveDocument(template, item));
  if (typeof node !== 'object' || node === null) return node;
  const keys = Object.keys(node);
  if (keys.length === 1 && ['Ref', 'Fn::Join', 'Fn::GetAtt'].includes(keys[0] as string)) {
    return resolveValue(template, node);
  }
  return Object.fromEntries(
    Object.entries(node).map(([key, value]) => [key, resolveDocument(template, value)]),
  );
}
