/**
 * How refresh and admin list items: through two sparse indexes of the cache
 * table, never a Scan of the table, which no key condition can limit. What
 * each role's DynamoDB statements reach is asserted whole, so a statement
 * that would reach a `KEYS#` item of the table fails here.
 */
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { validateStage } from '../../infra/config.js';
import { LISTING_INDEXES_CONTEXT } from '../../infra/constructs/token-cache.js';
import { example } from '../../infra/stages/example.js';
import { TokenVendingStack } from '../../infra/token-vending-stack.js';
import {
  ADMIN,
  actionsOf,
  allStatements,
  CDK_JSON_CONTEXT,
  logicalId,
  REFRESH,
  roleIdOf,
  type Statement,
  statementsOf,
  synth,
} from '../support/infra.js';

/** What a job record holds that no listing may show (dynamodb-key-job-store.ts). */
const KEY_JOB_SECRETS = ['idempotency_key', 'sealed_response', 'force_id', 'forced_by', 'write_id'];
const ITEM_ACTIONS = ['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:UpdateItem'];

describe('listing through indexes', () => {
  let template: Template;
  let table: string;
  beforeAll(() => {
    template = synth().template;
    table = logicalId(template, 'AWS::DynamoDB::Table', '"ttl"');
  });

  const tableArn = () => JSON.stringify({ 'Fn::GetAtt': [table, 'Arn'] });
  const indexArn = (name: string) =>
    JSON.stringify({ 'Fn::Join': ['', [{ 'Fn::GetAtt': [table, 'Arn'] }, `/index/${name}`]] });

  /**
   * Each DynamoDB resource a role's statements reach, with the actions and the
   * partition keys allowed there: `table TOKEN#*: dynamodb:GetItem`,
   * `index tokens: dynamodb:Scan`, or `other <json>` for anything else.
   */
  function reach(role: string): string[] {
    return statementsOf(template, role)
      .filter((s: Statement) => actionsOf(s).some((a) => a.startsWith('dynamodb:') || a === '*'))
      .flatMap((s) => {
        const resources = Array.isArray(s.Resource) ? s.Resource : [s.Resource];
        const actions = actionsOf(s).sort().join(',');
        const leading = (s.Condition as Record<string, Record<string, unknown>> | undefined)?.[
          'ForAllValues:StringLike'
        ]?.['dynamodb:LeadingKeys'];
        return resources.map((r) => {
          const json = JSON.stringify(r);
          if (json === tableArn()) return `table ${JSON.stringify(leading)}: ${actions}`;
          const index = ['tokens', 'key-jobs'].find((name) => json === indexArn(name));
          return index ? `index ${index}: ${actions}` : `other ${json}: ${actions}`;
        });
      })
      .sort();
  }

  it('keeps every token item in a sparse index of all its attributes, and every key job in one of its status attributes only', () => {
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      AttributeDefinitions: [
        { AttributeName: 'pk', AttributeType: 'S' },
        { AttributeName: 'token_pk', AttributeType: 'S' },
        { AttributeName: 'business_application_id', AttributeType: 'S' },
      ],
      GlobalSecondaryIndexes: [
        {
          IndexName: 'tokens',
          KeySchema: [{ AttributeName: 'token_pk', KeyType: 'HASH' }],
          Projection: { ProjectionType: 'ALL' },
        },
        {
          IndexName: 'key-jobs',
          KeySchema: [{ AttributeName: 'business_application_id', KeyType: 'HASH' }],
          Projection: {
            ProjectionType: 'INCLUDE',
            NonKeyAttributes: [
              'state',
              'attempts',
              'issue_count',
              'last_error',
              'last_error_at',
              'stored_at',
              'secret_name',
              'lease_until',
              'sealed_encoding',
            ],
          },
        },
      ],
    });
  });

  it('projects none of a key job secrets into the key-jobs index', () => {
    const [resource] = Object.values(template.findResources('AWS::DynamoDB::Table'));
    const indexes = resource?.Properties.GlobalSecondaryIndexes as Array<{
      IndexName: string;
      Projection: { ProjectionType: string; NonKeyAttributes?: string[] };
    }>;
    const keyJobs = indexes.find((i) => i.IndexName === 'key-jobs');

    expect(keyJobs?.Projection.ProjectionType).toBe('INCLUDE');
    for (const secret of KEY_JOB_SECRETS) {
      expect(keyJobs?.Projection.NonKeyAttributes).not.toContain(secret);
    }
  });

  it('gives refresh no statement reaching a KEYS# item: token items by key, the token index by Scan', () => {
    expect(reach(roleIdOf(template, REFRESH))).toEqual([
      'index tokens: dynamodb:Scan',
      'table ["TOKEN#*"]: dynamodb:GetItem,dynamodb:UpdateItem',
    ]);
  });

  it('gives admin no statement reaching a KEYS# item of the table: key jobs only through their status index', () => {
    expect(reach(roleIdOf(template, ADMIN))).toEqual([
      'index key-jobs: dynamodb:Scan',
      'index tokens: dynamodb:Scan',
      'table ["TOKEN#*"]: dynamodb:DeleteItem',
    ]);
  });

  it('lets no role Scan or Query the table itself, and no item action go without a key prefix', () => {
    const unlimited = [...allStatements(template)].flatMap(([role, statements]) =>
      statements
        .filter((s) =>
          (Array.isArray(s.Resource) ? s.Resource : [s.Resource]).some(
            (r) => JSON.stringify(r) === tableArn(),
          ),
        )
        .filter(
          (s) =>
            actionsOf(s).some((a) => a.startsWith('dynamodb:') && !ITEM_ACTIONS.includes(a)) ||
            !JSON.stringify(s.Condition ?? {}).includes('dynamodb:LeadingKeys'),
        )
        .map((s) => `${role} ${s.Sid}`),
    );

    expect(unlimited).toEqual([]);
  });
});

describe('the first of two deploys to a table created before the listing indexes', () => {
  const withContext = (value: string) => {
    const app = new App({
      context: {
        ...CDK_JSON_CONTEXT,
        'aws:cdk:bundling-stacks': [],
        [LISTING_INDEXES_CONTEXT]: value,
      },
    });
    const stack = new TokenVendingStack(app, 'TokenVending-example', {
      config: validateStage(example),
    });
    return Template.fromStack(stack);
  };

  let template: Template;
  beforeAll(() => {
    template = withContext('tokens');
  });

  it('creates only the token index, and grants Scan of no index the table lacks', () => {
    const [table] = Object.values(template.findResources('AWS::DynamoDB::Table'));
    const indexes = (table?.Properties.GlobalSecondaryIndexes ?? []) as Array<{
      IndexName: string;
    }>;
    const listing = (role: string) =>
      statementsOf(template, roleIdOf(template, role)).find((s) => s.Sid === 'ListThroughIndexes');

    expect(indexes.map((i) => i.IndexName)).toEqual(['tokens']);
    for (const role of [REFRESH, ADMIN]) {
      expect(JSON.stringify(listing(role)?.Resource)).toContain('/index/tokens');
      expect(JSON.stringify(listing(role)?.Resource)).not.toContain('/index/key-jobs');
    }
  });

  it('refuses an index name it does not know', () => {
    expect(() => withContext('tokens,token-jobs')).toThrow(
      `${LISTING_INDEXES_CONTEXT}: no listing index token-jobs (there are tokens, key-jobs)`,
    );
  });
});
