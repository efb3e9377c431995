import type { StageInput } from '../config.js';

/**
 * The example stage: what `npm run synth` and the infra tests build. Copy it to
 * a new file for a real deployment, register it in `index.ts`, and deploy with
 * `npx cdk deploy -c stage=<name>`. Every ARN below is a placeholder.
 */
export const example: StageInput = {
  stage: 'example',
  providerBaseUrl: 'https://api.provider.example',
  // Created by hand (docs/deploying.md, step 2); the stack only reads it.
  credentialsSecret: 'token-vending/example/provider-credentials',
  // The callers' account: its principals may reach the URL; the access
  // policy below decides which scopes each one gets. Deploy the stack in an
  // account of its own and list the callers' accounts (or set organizationId).
  callerAccounts: ['111122223333'],
  accessPolicy: {
    scopes: ['ba_123', 'ba_456'],
    grants: [
      { principal: 'arn:aws:iam::111122223333:role/checkout', scopes: ['ba_123'] },
      { principal: 'arn:aws:iam::111122223333:role/support', scopes: ['*'], unscoped: true },
    ],
  },
  keyIssuing: {
    businessApplicationIds: ['ba_123'],
    // Daily at 03:00 UTC; a run with nothing to do calls nothing upstream.
    schedule: 'cron(0 3 * * ? *)',
  },
  unscopedScopeMode: 'omit',
  alarmEmail: 'payments-oncall@example.com',
  secretsPrefix: 'token-vending/example',
  logRetentionDays: 365,
};
