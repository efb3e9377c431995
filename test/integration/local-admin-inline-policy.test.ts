/**
 * `npm run admin` against an `npm start` given its access policy inline
 * (`ACCESS_POLICY`), with nothing but the stack file: admin judges by the
 * policy the stack serves, so the key-issuing ids that policy lists are the
 * ones a run issues, and status shows its version and grants. Regression: the
 * stack file gave admin only the policy's scopes, so a run issued nothing and
 * reported success, and status showed another version with no principals.
 */
import { statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { documentDigest } from '../../functions/core/policy-source.js';
import {
  CHILD_ENV,
  type NpmStartGroup,
  npmRunAdmin,
  projectOfItsOwn,
  startNpmStartGroup,
} from '../support/npm-start.js';

const POLICY = JSON.stringify({
  scopes: ['ba_demo_1', 'ba_demo_2'],
  grants: [
    {
      principal: 'arn:aws:iam::000000000000:role/local-demo',
      scopes: ['*'],
      unscoped: true,
    },
  ],
  keyIssuing: { businessApplicationIds: ['ba_demo_2'] },
});

let project: string;
let stack: NpmStartGroup | undefined;

/** `npm run --silent admin -- <event>` in the project directory, with no variables of its own. */
const admin = (event: object) => npmRunAdmin(project, event, CHILD_ENV);

beforeAll(async () => {
  project = await projectOfItsOwn('tvf-admin-inline-policy-');
  stack = await startNpmStartGroup(project, {
    ...CHILD_ENV,
    PORT: '0',
    DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'),
    TABLE_NAME: `admin-inline-policy-${process.pid}-${Date.now()}`,
    ACCESS_POLICY: POLICY,
  });
}, 60_000);

afterAll(async () => {
  stack?.kill();
  if (project) await rm(project, { recursive: true, force: true });
});

describe('npm run admin with the stack given ACCESS_POLICY inline', () => {
  it('shows the inline policy in status: its version, its grants, its key-issuing ids', async () => {
    const run = await admin({ action: 'status' });

    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(run.stdout).policy).toMatchObject({
      version: documentDigest(POLICY),
      scopes: 2,
      principals: 1,
      key_issuing_ids: 1,
    });
  });

  it('issues keys for the ids the inline policy lists', async () => {
    const run = await admin({ action: 'issue-keys' });

    expect(run).toMatchObject({ code: 0 });
    expect(JSON.parse(run.stdout)).toEqual({ issued: ['ba_demo_2'], skipped: [], failed: [] });
    expect(statSync(join(project, '.local/secrets/basic-auth/ba_demo_2')).mode & 0o777).toBe(0o600);
  });
});
