import { ArnFormat, Lazy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import type { StageConfig } from '../config.js';
import type { TokenVendingFunction } from './token-vending-function.js';

/**
 * The provider's key and secret: a Secrets Manager secret created and filled by
 * hand (docs/deploying.md), never by the stack, so the secret never
 * passes through a template, a parameter or the CDK's assets.
 *
 * The stack sets the secret's resource policy: it denies `GetSecretValue` to
 * every principal but the roles of the functions connected here. An identity
 * policy alone (PowerUserAccess, say) would otherwise read it, since in the
 * secret's own account an identity policy's Allow suffices when nothing
 * denies ("Determine access", Secrets Manager User Guide:
 * docs.aws.amazon.com/secretsmanager/latest/userguide/determine-acccess_examine-iam-policies.html).
 * An explicit Deny in a resource policy wins over any Allow. The guardrails
 * (guardrails.ts) keep anyone but the deployment from changing that policy.
 */
export class CredentialsSecret extends Construct {
  /** What the functions get as CREDENTIALS_SECRET_ARN (GetSecretValue takes an ARN or a name). */
  readonly secretId: string;
  /** The IAM resource: the complete ARN, or `<name>-??????` (the suffix Secrets Manager adds). */
  readonly resourceArn: string;
  /** The same in any region: the secret and its replicas, which keep its name. */
  readonly anyRegionArn: string;
  readonly #readers: iam.IRole[] = [];

  constructor(scope: Construct, id: string, secret: StageConfig['credentialsSecret']) {
    super(scope, id);
    if (secret.kind === 'arn') {
      this.secretId = secret.arn;
      this.resourceArn = secret.arn;
      // arn:partition:secretsmanager:region:account:secret:name-suffix
      this.anyRegionArn = secret.arn
        .split(':')
        .map((part, i) => (i === 3 ? '*' : part))
        .join(':');
    } else {
      this.secretId = secret.name;
      const arnIn = (region?: string) =>
        Stack.of(this).formatArn({
          service: 'secretsmanager',
          resource: 'secret',
          resourceName: `${secret.name}-??????`,
          arnFormat: ArnFormat.COLON_RESOURCE_NAME,
          ...(region === undefined ? {} : { region }),
        });
      this.resourceArn = arnIn();
      this.anyRegionArn = arnIn('*');
    }
    new secretsmanager.CfnResourcePolicy(this, 'ReadersOnly', {
      secretId: this.secretId,
      blockPublicPolicy: true,
      resourcePolicy: {
        Version: '2012-10-17',
        Statement: [
          {
            Sid: 'OnlyTheTokenFunctionsReadIt',
            Effect: 'Deny',
            Principal: '*',
            Action: 'secretsmanager:GetSecretValue',
            Resource: '*',
            Condition: {
              ArnNotEquals: {
                'aws:PrincipalArn': Lazy.list({
                  produce: () => this.#readers.map((role) => role.roleArn),
                }),
              },
            },
          },
        ],
      },
    });
  }

  /**
   * Sets CREDENTIALS_SECRET_ARN and grants reading this one secret
   * (GetSecretValue only); the secret's resource policy admits no one else.
   */
  connect(fn: TokenVendingFunction): void {
    this.#readers.push(fn.role);
    fn.addEnvironment('CREDENTIALS_SECRET_ARN', this.secretId);
    fn.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'ReadProviderCredentials',
        actions: ['secretsmanager:GetSecretValue'],
        resources: [this.resourceArn],
      }),
    );
  }
}
