import { ArnFormat, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import type { StageConfig } from '../config.js';
import type { TokenVendingFunction } from './token-vending-function.js';

/**
 * The provider's key and secret: a Secrets Manager secret created and filled by
 * hand (docs/deploying.md), never by the stack, so the secret never
 * passes through a template, a parameter or the CDK's assets.
 */
export class CredentialsSecret extends Construct {
  /** What the functions get as CREDENTIALS_SECRET_ARN (GetSecretValue takes an ARN or a name). */
  readonly secretId: string;
  /** The IAM resource: the complete ARN, or `<name>-??????` (the suffix Secrets Manager adds). */
  readonly resourceArn: string;

  constructor(scope: Construct, id: string, secret: StageConfig['credentialsSecret']) {
    super(scope, id);
    if (secret.kind === 'arn') {
      this.secretId = secret.arn;
      this.resourceArn = secret.arn;
    } else {
      this.secretId = secret.name;
      this.resourceArn = Stack.of(this).formatArn({
        service: 'secretsmanager',
        resource: 'secret',
        resourceName: `${secret.name}-??????`,
        arnFormat: ArnFormat.COLON_RESOURCE_NAME,
      });
    }
  }

  /** Sets CREDENTIALS_SECRET_ARN and grants reading this one secret (GetSecretValue only). */
  connect(fn: TokenVendingFunction): void {
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
