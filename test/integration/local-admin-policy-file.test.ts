/**
 * `npm run admin` against an `npm start` that reads ACCESS_POLICY_FILE, as an
 * operator runs both: in a project directory (a temporary one linking this
 * repository's sources and node_modules), the policy file beside them. The
 * admin reads the file afresh on each run, whether the operator passes
 * ACCESS_POLICY_FILE again or only the stack file names it: its status shows
 * the file's digest, and it refreshes only the scopes the file lists, not the
 * demo policy's.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { TokenVendingClient } from '../../client/index.js';
import { documentDigest } from '../../functions/core/policy-source.js';
import { DEMO_IDENTITY } from '../../local/local-identities.js';
import {
  CHILD_ENV,
  type NpmStartGroup,
  npmRunAdmin,
  projectOfItsOwn,
  startNpmStartGroup,
} from '../support/npm-start.js';

/** The demo identity's role, granted everything the file lists. */
const DEMO_ROLE = 'arn:aws:iam::000000000000:role/local-demo';
const policy = (scopes: string[]) =>
  JSON.stringify({ scopes, grants: [{ principal: DEMO_ROLE, scopes: ['*'] }] });

let project: string;
let stack: NpmStartGroup | undefined;
let stackEnv: Record<string, string>;

/** `npm run --silent admin -- <event>` in the project directory. */
const admin = (event: object, env: Record<string, string>) => npmRunAdmin(project, event, env);
const statusOf = async (env: Record<string, string>) => {
  const run = await admin({ action: 'status' }, env);
  expect(run).toMatchObject({ code: 0, stderr: '' });
  return JSON.parse(run.stdout).policy;
};

beforeAll(async () => {
  project = await projectOfItsOwn('tvf-admin-policy-file-');
  writeFileSync(join(project, 'policy.json'), policy(['ba_demo_2']));
  stackEnv = {
    PORT: '0',
    DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'),
    TABLE_NAME: `admin-policy-file-${process.pid}-${Date.now()}`,
    // Relative, as an operator writes it: resolved in the project directory.
    ACCESS_POLICY_FILE: 'policy.json',
    POLICY_REFRESH_SECONDS: '1',
    LOCAL_IDENTITIES: JSON.stringify([
      { ...DEMO_IDENTITY, arn: 'arn:aws:sts::000000000000:assumed-role/local-demo/s' },
    ]),
  };
  stack = await startNpmStartGroup(project, { ...CHILD_ENV, ...stackEnv });
}, 60_000);

afterAll(async () => {
  stack?.kill();
  if (project) await rm(project, { recursive: true, force: true });
});

describe('npm run admin with ACCESS_POLICY_FILE', () => {
  it("shows the file's policy in status: its digest as version, when this run read it", async () => {
    const text = readFileSync(join(project, 'policy.json'), 'utf8');
    const started = Math.floor(Date.now() / 1000);

    // As the operator gave it to npm start, and with nothing but the stack file.
    const given = await statusOf({ ...CHILD_ENV, ...stackEnv });
    const fromStackFile = await statusOf(CHILD_ENV);

    for (const shown of [given, fromStackFile]) {
      expect(shown).toEqual({
        version: documentDigest(text),
        digest: documentDigest(text),
        loaded_at: expect.any(Number),
        scopes: 1,
        principals: 1,
        key_issuing_ids: 0,
      });
      expect(shown.loaded_at).toBeGreaterThanOrEqual(started);
    }
  });

  it('refreshes only the scopes the file lists, and follows an edit of the file', async () => {
    // ba_demo_1 is in the demo policy, not in the file.
    const refused = await admin({ action: 'refresh', scope: 'ba_demo_1' }, CHILD_ENV);
    const listed = await admin({ action: 'refresh', scope: 'ba_demo_2' }, CHILD_ENV);
    const edited = policy(['ba_demo_1', 'ba_demo_2']);
    writeFileSync(join(project, 'policy.json'), edited);
    const afterEdit = await admin({ action: 'refresh', scope: 'ba_demo_1' }, CHILD_ENV);
    const shown = await statusOf(CHILD_ENV);

    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /^admin: invalid_request: that scope is not in the access policy/m,
    );
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject({ scope: 'ba_demo_2', status: 'refreshed' });
    expect(afterEdit.code).toBe(0);
    expect(JSON.parse(afterEdit.stdout)).toMatchObject({ scope: 'ba_demo_1', status: 'refreshed' });
    expect(shown).toMatchObject({ version: documentDigest(edited), scopes: 2 });
  }, 60_000);
});

describe('npm run admin while the policy file holds an invalid edit', () => {
  it('regression: judges by the policy the running stack keeps in force, and says so', async () => {
    // Every admin action refused with invalid_config, while the stack served on.
    const info = JSON.parse(readFileSync(join(project, '.local/stack.json'), 'utf8')) as {
      functionUrl: string;
    };
    const client = new TokenVendingClient({
      url: info.functionUrl,
      region: 'us-east-1',
      credentials: DEMO_IDENTITY,
    });
    const good = policy(['ba_demo_1', 'ba_demo_2']);
    writeFileSync(join(project, 'policy.json'), good);
    // The stack loads the good version as it judges a caller (within its 1 s refresh).
    let before = await client.getGrants();
    for (let tries = 0; before.policyVersion !== documentDigest(good) && tries < 50; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      before = await client.getGrants();
    }
    writeFileSync(
      join(project, 'policy.json'),
      '{"scopes":["ba_demo_1"],"grants":[{"principal":"x"}]}',
    );

    const status = await admin({ action: 'status' }, CHILD_ENV);
    const refreshed = await admin({ action: 'refresh', scope: 'ba_demo_2' }, CHILD_ENV);

    expect(before.policyVersion).toBe(documentDigest(good));
    expect(status.code).toBe(0);
    expect(status.stderr).toMatch(
      new RegExp(
        `^admin: warning: ACCESS_POLICY_FILE .*policy\\.json is invalid: grants\\.0\\.principal: .*; using the policy the running stack keeps in force \\(${documentDigest(good)}\\)\\n$`,
      ),
    );
    expect(JSON.parse(status.stdout).policy).toMatchObject({ version: documentDigest(good) });
    expect(refreshed.code).toBe(0);
    expect(JSON.parse(refreshed.stdout)).toMatchObject({ scope: 'ba_demo_2', status: 'refreshed' });
  }, 60_000);
});
