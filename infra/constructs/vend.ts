import { Duration, Stack, Token } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { AccessPolicyDocument } from '../../functions/core/access-policy.js';
import type { StageConfig } from '../config.js';
import type { CredentialsSecret } from './credentials-secret.js';
import type { TokenCache } from './token-cache.js';
import { TokenVendingFunction } from './token-vending-function.js';

/** Seconds before expiry when one caller refreshes; the refresh function uses the same. */
export const REFRESH_AHEAD_SECONDS = 900;

export interface VendProps {
  readonly config: StageConfig;
  readonly cache: TokenCache;
  readonly credentials: CredentialsSecret;
  /** The key-issuing job's role: a caller like any other, granted the unscoped token. */
  readonly keyIssuer: iam.IRole;
  readonly logRetention: logs.RetentionDays;
}

/**
 * The vend-token function behind its Function URL (`AuthType AWS_IAM`).
 *
 * Its resource-based policy admits the stage's caller accounts or its
 * organization, and the key issuer's role, with exactly what AWS requires of a
 * caller of an IAM-authorized URL created since October 2025:
 * `lambda:InvokeFunctionUrl` (for AWS_IAM URLs) and `lambda:InvokeFunction`
 * only through the URL (`lambda:InvokedViaFunctionUrl`). It does not grow
 * with the access policy: the function decides which scopes each caller gets.
 *
 * What this policy cannot do: stop a direct Invoke from the function's own
 * account. There an identity-based policy alone allows `lambda:InvokeFunction`
 * (AWS managed `AWSLambdaRole`, `AWSLambda_FullAccess`, `PowerUserAccess`, the
 * console's Test tab), and the caller can hand the function an event naming
 * any principal; the function cannot tell it from the URL's. Only callers in
 * other accounts need the resource policy's consent. So the stack belongs in
 * an account of its own, with callers in other accounts, and the guardrails
 * (infra/constructs/guardrails.ts) deny the direct Invoke for the rest.
 */
export class Vend extends Construct {
  readonly fn: TokenVendingFunction;
  readonly url: lambda.FunctionUrl;
  /**
   * The access policy's first version (JSON): the stage's scopes, grants and
   * key-issuing ids. The key issuer's grant is not in it: the vend function
   * adds it to every version (KEY_ISSUER_ARN), so no edit can lock the job out.
   */
  readonly initialPolicyDocument: string;
  /** The variables vend and refresh share (they run the same token cache). */
  readonly sharedEnvironment: Readonly<Record<string, string>>;

  constructor(scope: Construct, id: string, props: VendProps) {
    super(scope, id);
    const { config } = props;
    const policy: AccessPolicyDocument = {
      scopes: config.accessPolicy.scopes,
      grants: config.accessPolicy.grants,
      keyIssuing: { businessApplicationIds: [...config.keyIssuing.businessApplicationIds] },
    };
    this.initialPolicyDocument = JSON.stringify(policy);
    this.sharedEnvironment = {
      PROVIDER_BASE_URL: config.providerBaseUrl,
      UNSCOPED_SCOPE_MODE: config.unscopedScopeMode,
      REFRESH_AHEAD_SECONDS: String(REFRESH_AHEAD_SECONDS),
    };

    this.fn = new TokenVendingFunction(this, 'VendToken', {
      stage: config.stage,
      name: 'vend-token',
      description: 'Serves provider OAuth tokens to IAM callers over its Function URL',
      // 30 s: the worst vend waits 13 s for another instance's refresh, then
      // takes the lease over and mints within 9.5 s (the lease less 0.5 s),
      // plus DynamoDB, KMS and Secrets Manager calls of at most 2 s each.
      timeout: Duration.seconds(30),
      // 512 MB: CPU grows with memory; TLS, KMS and JSON work on the request
      // path and the cold start of a bundle of up to 350 KB run faster for the same cost.
      memorySize: 512,
      reservedConcurrentExecutions: config.reservedConcurrency.vend,
      provisionedConcurrency: config.provisionedConcurrency,
      destroyLogsWithStack: config.throwaway,
      logRetention: props.logRetention,
      environment: { ...this.sharedEnvironment, KEY_ISSUER_ARN: props.keyIssuer.roleArn },
    });
    props.cache.connectTable(this.fn, {
      items: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
      prefix: 'TOKEN#',
    });
    props.cache.connectSealer(this.fn, 'TOKEN#', 'encrypt');
    props.credentials.connect(this.fn);

    // On the `live` alias, so a release shifts the URL's traffic gradually.
    this.url = this.fn.live.addFunctionUrl({ authType: lambda.FunctionUrlAuthType.AWS_IAM });
    const { callerAccounts, organizationId } = config.access;
    const accounts =
      callerAccounts === 'own-account' ? [Stack.of(this).account] : [...callerAccounts];
    for (const account of accounts) {
      // Ids from the account, so reordering the list changes no permission.
      const id = Token.isUnresolved(account) ? 'OwnAccount' : `Account${account}`;
      this.#allowCaller(id, new iam.AccountPrincipal(account));
    }
    if (organizationId !== undefined) {
      this.#allowCaller('Organization', new iam.OrganizationPrincipal(organizationId));
    }
    this.#allowCaller('KeyIssuer', new iam.ArnPrincipal(props.keyIssuer.roleArn));
  }

  #allowCaller(id: string, principal: iam.IPrincipal): void {
    this.fn.live.addPermission(`${id}Url`, {
      principal,
      action: 'lambda:InvokeFunctionUrl',
      functionUrlAuthType: lambda.FunctionUrlAuthType.AWS_IAM,
    });
    this.fn.live.addPermission(`${id}ViaUrl`, {
      principal,
      action: 'lambda:InvokeFunction',
      invokedViaFunctionUrl: true,
    });
  }
}
