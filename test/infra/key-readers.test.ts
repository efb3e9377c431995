/**
 * Roles that read issued keys (`keyIssuing.readers`) are named by ARN, but an
 * IAM policy attaches to a role by name, in the account the stack is deployed
 * to: a reader of another account must never become the role of that name
 * in the stack's account.
 */
import { App } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { validateStage } from '../../infra/config.js';
import { example } from '../../infra/stages/example.js';
import { TokenVendingStack } from '../../infra/token-vending-stack.js';
import { CDK_JSON_CONTEXT, stage, synth } from '../support/infra.js';

describe('a key reader role of another account', () => {
  it('regression: grants nothing to the role of that name in the stack account', () => {
    // Synthesized without an account (as `npm run synth` and a CI synth are):
    // the policy attaches by name to whatever account the template is deployed to.
    const { template } = synth(
      stage({
        keyIssuing: {
          ...example.keyIssuing,
          readers: [
            {
              role: 'arn:aws:iam::999988887777:role/merchant-payments',
              businessApplicationIds: ['ba_123'],
            },
          ],
        },
      }),
    );
    const [policy] = Object.values(template.findResources('AWS::IAM::Policy')).filter((p) =>
      JSON.stringify(p).includes('ReadIssuedKeys'),
    );
    if (!policy) throw new Error('no reader policy');
    const [statement] = (
      policy.Properties as { PolicyDocument: { Statement: Array<{ Condition?: unknown }> } }
    ).PolicyDocument.Statement;

    expect(statement?.Condition).toEqual({
      StringEquals: { 'aws:PrincipalAccount': '999988887777' },
    });
  });

  it("regression: is refused when the stack's account is known", () => {
    const app = new App({ context: { ...CDK_JSON_CONTEXT, 'aws:cdk:bundling-stacks': [] } });
    const input = stage({
      keyIssuing: {
        ...example.keyIssuing,
        readers: [
          {
            role: 'arn:aws:iam::999988887777:role/merchant-payments',
            businessApplicationIds: ['ba_123'],
          },
        ],
      },
    });
    // As `cdk deploy` builds it: CDK_DEFAULT_ACCOUNT is the deploying account.
    new TokenVendingStack(app, 'TokenVending-example', {
      config: validateStage(input),
      env: { account: '111122223333', region: 'eu-west-1' },
    });

    // The synth fails, naming the reader, before any template is deployed.
    expect(() => app.synth()).toThrow(
      /readers\[0\]\.role .* is a role of account 999988887777, not of the stack's account 111122223333/,
    );
  });
});
