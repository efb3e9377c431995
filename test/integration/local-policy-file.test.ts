/**
 * ACCESS_POLICY_FILE under a running `npm start`, driven as a user would: edit
 * the file, and the running stack's vends follow within POLICY_REFRESH_SECONDS;
 * a broken edit is logged with every one of its problems and leaves the
 * policy in force.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEMO_IDENTITY, type LocalIdentity } from '../../local/local-identities.js';
import { type NpmStart, startNpmStart } from '../support/npm-start.js';
import { signedGet } from '../support/sigv4.js';

const PARTNER: LocalIdentity = {
  accessKeyId: 'AKIALOCALPARTNER0001',
  secretAccessKey: 'partnerSecretAccessKey00000000000000000',
  arn: 'arn:aws:iam::111122223333:user/new-partner',
};
const DEMO_ROLE = 'arn:aws:iam::000000000000:role/local-demo';

const policy = (partner: 'granted' | 'not granted') =>
  JSON.stringify({
    scopes: ['ba_demo_1'],
    grants: [
      { principal: DEMO_ROLE, scopes: ['*'] },
      ...(partner === 'granted' ? [{ principal: PARTNER.arn, scopes: ['ba_demo_1'] }] : []),
    ],
  });

/** An edit with four problems, one in a grant to the partner: none of it may take effect. */
const BROKEN = {
  scopes: ['ba_demo_1', 'ba demo'],
  grants: [
    { principal: DEMO_ROLE, scopes: ['*'], unscoped: 'yes' },
    { principal: 'new-partner', scopes: ['ba_demo_1'] },
    { principal: PARTNER.arn, scopes: ['ba_other'] },
  ],
};
/** What the stack's log must name, one per problem. */
const BROKEN_PROBLEMS = [
  'scopes.1: is not a valid scope name',
  // Regression: the problem quoted the value ("but received \"yes\"").
  'grants.0.unscoped: Invalid type: Expected boolean',
  'grants.1.principal: must be an IAM role ARN',
  'grants.2.scopes: "ba_other" is not listed in scopes',
];

/** The stack's `access policy rejected` log line, once it prints one (within `withinMs`). */
async function rejection(stack: NpmStart, withinMs: number) {
  const started = Date.now();
  const find = () =>
    stack
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{') && line.includes('access policy rejected'))
      .map((line) => JSON.parse(line) as { level: string; problems: string; keeping: string })
      .at(-1);
  while (find() === undefined && Date.now() - started < withinMs) {
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return find();
}

async function status(stack: NpmStart, who: LocalIdentity): Promise<number> {
  const response = await signedGet(`${stack.url}/token?scope=ba_demo_1`, who);
  await response.body?.cancel();
  return response.status;
}

/** Asks every 200 ms until `who` gets `expected`, up to `withinMs`; the status seen last. */
async function until(stack: NpmStart, who: LocalIdentity, expected: number, withinMs: number) {
  const started = Date.now();
  let seen = await status(stack, who);
  while (seen !== expected && Date.now() - started < withinMs) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    seen = await status(stack, who);
  }
  return { seen, afterMs: Date.now() - started };
}

describe('ACCESS_POLICY_FILE under a running npm start', () => {
  let stack: NpmStart;
  const dir = mkdtempSync(join(tmpdir(), 'tvf-policy-'));
  const file = join(dir, 'policy.json');

  beforeAll(async () => {
    writeFileSync(file, policy('not granted'));
    stack = await startNpmStart(dir, {
      ACCESS_POLICY_FILE: file,
      POLICY_REFRESH_SECONDS: '1',
      LOCAL_IDENTITIES: JSON.stringify([
        { ...DEMO_IDENTITY, arn: 'arn:aws:sts::000000000000:assumed-role/local-demo/s' },
        PARTNER,
      ]),
      DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'),
      TABLE_NAME: `policy-file-${Date.now()}`,
    });
  }, 60_000);
  afterAll(() => {
    if (stack?.child.exitCode === null) stack.child.kill('SIGTERM');
  });

  it('grants, revokes, and keeps the policy in force through a broken edit', async () => {
    // 1. Grant a new principal: 403 turns to 200.
    expect(await status(stack, PARTNER)).toBe(403);
    writeFileSync(file, policy('granted'));
    const granted = await until(stack, PARTNER, 200, 5000);

    // 2. Revoke it: 200 turns to 403.
    writeFileSync(file, policy('not granted'));
    const revoked = await until(stack, PARTNER, 403, 5000);

    // 3. A broken edit with several problems, granting the partner among
    // them: the old policy is still enforced, and the log names every problem.
    // The stack reads the file when a vend needs the policy, at most every second.
    writeFileSync(file, JSON.stringify(BROKEN));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const partnerAfter = await status(stack, PARTNER);
    const demoAfter = await status(stack, DEMO_IDENTITY);
    const rejected = await rejection(stack, 5000);

    expect(granted.seen).toBe(200);
    expect(revoked.seen).toBe(403);
    expect(partnerAfter).toBe(403);
    expect(demoAfter).toBe(200);
    expect(rejected).toMatchObject({ level: 'ERROR', keeping: expect.stringMatching(/^sha256:/) });
    for (const problem of BROKEN_PROBLEMS) expect(rejected?.problems).toContain(problem);
  }, 30_000);

  it('regression: refuses an edit over 1 MB, which AppConfig could never deploy and tvm policy validate refuses, keeping the policy in force', async () => {
    // Valid but for its size: 80,000 more scopes, about 1.4 MB
    const scopes = Array.from({ length: 80_000 }, (_, i) => `ba_${String(i).padStart(12, '0')}`);
    writeFileSync(
      file,
      JSON.stringify({
        scopes: ['ba_demo_1', ...scopes],
        grants: [
          { principal: DEMO_ROLE, scopes: ['*'] },
          { principal: PARTNER.arn, scopes: ['*'] },
        ],
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const partnerAfter = await status(stack, PARTNER);
    const rejected = await rejection(stack, 5000);

    expect(partnerAfter).toBe(403);
    expect(rejected?.problems).toMatch(
      /\(document\): \d+ bytes, over the 1048576 bytes AppConfig's hosted configuration store takes/,
    );
  }, 30_000);
});
