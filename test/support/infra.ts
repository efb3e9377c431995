/**
 * Builds the token vending stack for infra tests and reads its template, with
 * the context `cdk.json` gives `npm run synth` (the feature flags).
 * Bundling is off unless asked (context `aws:cdk:bundling-stacks: []`), and so
 * is the CloudFormation schema check, which only the nag test needs.
 */
import { readFileSync } from 'node:fs';
import { App, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { type StageInput, validateStage } from '../../infra/config.js';
import { example } from '../../infra/stages/example.js';
import { TokenVendingStack } from '../../infra/token-vending-stack.js';

export const ACCOUNT = '123456789012';
export const REGION = 'eu-west-1';

/** The example stage's function names, as the tests expect them deployed. */
export const VEND = 'token-vending-example-vend-token';
export const REFRESH = 'token-vending-example-refresh';
export const ISSUE_KEYS = 'token-vending-example-issue-keys';
export const ADMIN = 'token-vending-example-admin';
export const FUNCTIONS = [VEND, REFRESH, ISSUE_KEYS, ADMIN];

/** The context in `cdk.json`: what the CDK CLI passes to `infra/app.ts`. */
export const CDK_JSON_CONTEXT: Record<string, unknown> = JSON.parse(
  readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8'),
).context;

export interface Built {
  readonly app: App;
  readonly stack: TokenVendingStack;
  readonly template: Template;
}

/** The example stage with some fields changed. */
export function stage(changes: Partial<Record<keyof StageInput, unknown>> = {}): StageInput {
  return { ...example, ...changes } as StageInput;
}

/** Constructs a fresh app and stack from a stage; `synth` makes the template. */
export function buildStack(
  input: StageInput = example,
  options: { bundling?: boolean; nag?: boolean; outdir?: string } = {},
): { app: App; stack: TokenVendingStack } {
  const app = new App({
    context: {
      ...CDK_JSON_CONTEXT,
      'aws:cdk:bundling-stacks': options.bundling ? ['**'] : [],
    },
    builtinCloudFormationValidation: options.nag === true,
    ...(options.outdir === undefined ? {} : { outdir: options.outdir }),
  });
  const stack = new TokenVendingStack(app, `TokenVending-${input.stage}`, {
    config: validateStage(input),
  });
  if (options.nag) Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { app, stack };
}

/** A fresh stack from `input` and its synthesized template. */
export function synth(input: StageInput = example): Built {
  const { app, stack } = buildStack(input);
  return { app, stack, template: Template.fromStack(stack) };
}

type Json = unknown;
type Resources = Record<string, { Type: string; Properties: Record<string, Json> }>;

/** The logical id of the one resource of `type` whose properties contain `marker` (as JSON). */
export function logicalId(template: Template, type: string, marker: string): string {
  const found = Object.entries(template.findResources(type)).filter(([, resource]) =>
    JSON.stringify(resource).includes(marker),
  );
  if (found.length !== 1) {
    throw new Error(`expected one ${type} containing ${marker}, found ${found.length}`);
  }
  return (found[0] as [string, unknown])[0];
}

/** The logical id of a function by its name, e.g. `token-vending-example-vend-token`. */
export function functionId(template: Template, name: string): string {
  return logicalId(template, 'AWS::Lambda::Function', `"FunctionName":"${name}"`);
}

/** The role logical id of a function. */
export function roleIdOf(template: Template, name: string): string {
  const fn = template.toJSON().Resources[functionId(template, name)];
  return fn.Properties.Role['Fn::GetAtt'][0];
}

export interface Statement {
  readonly Sid?: string;
  readonly Effect: string;
  readonly Action: string | string[];
  readonly Resource: Json;
  readonly Condition?: Record<string, Record<string, Json>>;
}

/** Every statement of the IAM policies attached to a role. */
export function statementsOf(template: Template, roleId: string): Statement[] {
  const resources = template.toJSON().Resources as Resources;
  return Object.values(resources)
    .filter(
      (r) =>
        r.Type === 'AWS::IAM::Policy' &&
        (r.Properties.Roles as Json[]).some(
          (ref) => JSON.stringify(ref) === JSON.stringify({ Ref: roleId }),
        ),
    )
    .flatMap((r) => (r.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
}

/** Every role's statements, by role logical id. */
export function allStatements(template: Template): Map<string, Statement[]> {
  const roles = Object.keys(template.findResources('AWS::IAM::Role'));
  return new Map(roles.map((role) => [role, statementsOf(template, role)]));
}

export const actionsOf = (statement: Statement): string[] =>
  Array.isArray(statement.Action) ? statement.Action : [statement.Action];

/**
 * A CloudFormation value with its references replaced by plausible values of
 * this account and region, as the functions would see them at run time.
 */
export function resolveValue(template: Template, value: Json): string {
  const resources = template.toJSON().Resources as Resources;
  const visit = (node: Json): string => {
    if (typeof node === 'string') return node;
    const obj = node as Record<string, Json>;
    if (obj['Fn::Join']) {
      const [delimiter, parts] = obj['Fn::Join'] as [string, Json[]];
      return parts.map(visit).join(delimiter);
    }
    if (obj.Ref !== undefined) {
      const ref = obj.Ref as string;
      if (ref === 'AWS::Region') return REGION;
      if (ref === 'AWS::AccountId') return ACCOUNT;
      if (ref === 'AWS::Partition') return 'aws';
      return `${ref.toLowerCase()}-physical-name`;
    }
    if (obj['Fn::GetAtt']) {
      const [id, attribute] = obj['Fn::GetAtt'] as [string, string];
      const type = resources[id]?.Type;
      if (attribute === 'FunctionUrl') {
        return `https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.${REGION}.on.aws/`;
      }
      if (type === 'AWS::IAM::Role') return `arn:aws:iam::${ACCOUNT}:role/${id}`;
      if (type === 'AWS::KMS::Key') {
        return `arn:aws:kms:${REGION}:${ACCOUNT}:key/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0`;
      }
      if (type === 'AWS::Lambda::Function')
        return `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${id}`;
      return `${id}.${attribute}`;
    }
    throw new Error(`cannot resolve ${JSON.stringify(node)}`);
  };
  return visit(value);
}

/** A function's environment as it would be at run time. */
export function environmentOf(template: Template, name: string): Record<string, string> {
  const fn = template.toJSON().Resources[functionId(template, name)];
  const variables = fn.Properties.Environment.Variables as Record<string, Json>;
  return Object.fromEntries(
    Object.entries(variables).map(([key, value]) => [key, resolveValue(template, value)]),
  );
}

/** The `_<function name>-schema` document's test events, by name. */
export function testEventsOf(template: Template, functionName: string): Record<string, Json> {
  const schemas = template.findResources('AWS::EventSchemas::Schema', {
    Properties: { SchemaName: `_${functionName}-schema` },
  });
  const [schema] = Object.values(schemas) as Array<{ Properties: { Content: string } }>;
  if (!schema) throw new Error(`no schema for ${functionName}`);
  const content = JSON.parse(schema.Properties.Content) as {
    components: { examples: Record<string, { value: Json }> };
  };
  return Object.fromEntries(
    Object.entries(content.components.examples).map(([name, example]) => [name, example.value]),
  );
}

/** The logical id of a function's `live` alias. */
export function aliasId(template: Template, name: string): string {
  const fn = functionId(template, name);
  const found = Object.entries(template.findResources('AWS::Lambda::Alias')).filter(
    ([, r]) => JSON.stringify(r.Properties.FunctionName) === JSON.stringify({ Ref: fn }),
  );
  if (found.length !== 1) throw new Error(`expected one alias of ${name}, found ${found.length}`);
  return (found[0] as [string, unknown])[0];
}
