import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import { Construct } from 'constructs';
import type { TokenVendingFunction } from './token-vending-function.js';

/** Item key prefixes (functions/core/item-keys.ts, functions/issue-keys/business-application-id.ts). */
export type ItemPrefix = 'TOKEN#' | 'KEYS#';
export type ItemAction = 'dynamodb:GetItem' | 'dynamodb:UpdateItem' | 'dynamodb:DeleteItem';

/**
 * How a function seals: `encrypt` is KmsSealer (functions/adapters/sealers.ts,
 * tokens: KMS Encrypt and Decrypt); `envelope` is KmsEnvelopeSealer
 * (functions/adapters/kms-envelope-sealer.ts, key-issuing answers that may
 * exceed Encrypt's 4 KiB: GenerateDataKey and Decrypt).
 */
export type Sealer = 'encrypt' | 'envelope';
const SEALER_ACTIONS: Record<Sealer, readonly string[]> = {
  encrypt: ['kms:Encrypt', 'kms:Decrypt'],
  envelope: ['kms:GenerateDataKey', 'kms:Decrypt'],
};

export interface TableAccess {
  /** Item actions, allowed only on items whose `pk` starts with `prefix`. */
  readonly items: readonly ItemAction[];
  readonly prefix: ItemPrefix;
  /** Scan (not limited by key: the functions filter by prefix themselves). */
  readonly scan?: boolean;
}

/**
 * KMS actions DynamoDB performs with a caller's credentials on a table
 * encrypted with a customer managed key (the set aws-cdk-lib's table grants
 * give, written out instead of `kms:ReEncrypt*` and `kms:GenerateDataKey*`).
 * Granted only through DynamoDB (`kms:ViaService`), so no role can use them directly.
 */
const KMS_VIA_DYNAMODB = [
  'kms:Decrypt',
  'kms:DescribeKey',
  'kms:Encrypt',
  'kms:GenerateDataKey',
  'kms:GenerateDataKeyWithoutPlaintext',
  'kms:ReEncryptFrom',
  'kms:ReEncryptTo',
];

export interface TokenCacheProps {
  readonly stage: string;
}

/**
 * The DynamoDB table (token cache, leases, key-issuing job records) and the
 * customer managed KMS key that encrypts the table and seals, in the
 * functions, cached tokens and recovery copies of issued keys. Both are kept
 * when the stack is deleted: the table may hold the only copy of keys the
 * provider issued (sealed, waiting to be stored), and without the key nothing
 * sealed can be read back.
 */
export class TokenCache extends Construct {
  readonly table: dynamodb.Table;
  readonly key: kms.Key;

  constructor(scope: Construct, id: string, props: TokenCacheProps) {
    super(scope, id);
    this.key = new kms.Key(this, 'Key', {
      alias: `alias/token-vending-${props.stage}`,
      description: `token-vending ${props.stage}: encrypts the table, seals cached tokens and recovery copies of issued keys`,
      enableKeyRotation: true,
      pendingWindow: Duration.days(30),
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.table = new dynamodb.Table(this, 'Table', {
      partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
      // On demand: traffic follows callers, and one item per scope stays small.
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      // `ttl = expires_at - 60`; reads check expires_at themselves, as deletion is late.
      timeToLiveAttribute: 'ttl',
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: this.key,
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
  }

  /**
   * Sets TABLE_NAME and grants exactly `access`: item actions limited to one
   * key prefix (`dynamodb:LeadingKeys`), Scan if asked, and the KMS use DynamoDB
   * makes of the table key on the caller's behalf.
   */
  connectTable(fn: TokenVendingFunction, access: TableAccess): void {
    fn.addEnvironment('TABLE_NAME', this.table.tableName);
    fn.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: `Items${access.prefix === 'TOKEN#' ? 'Token' : 'Keys'}Only`,
        actions: [...access.items],
        resources: [this.table.tableArn],
        conditions: {
          'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`${access.prefix}*`] },
        },
      }),
    );
    if (access.scan) {
      fn.role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          sid: 'ScanTable',
          actions: ['dynamodb:Scan'],
          resources: [this.table.tableArn],
        }),
      );
    }
    fn.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'TableKeyThroughDynamoDBOnly',
        actions: KMS_VIA_DYNAMODB,
        resources: [this.key.keyArn],
        conditions: {
          StringEquals: { 'kms:ViaService': `dynamodb.${Stack.of(this).region}.amazonaws.com` },
        },
      }),
    );
  }

  /**
   * Sets KMS_KEY_ID and grants the two KMS operations of the function's sealer
   * with this key only, and only under the encryption context `{pk}` of the
   * items the function owns (each item is sealed under its own key).
   */
  connectSealer(fn: TokenVendingFunction, prefix: ItemPrefix, sealer: Sealer): void {
    fn.addEnvironment('KMS_KEY_ID', this.key.keyArn);
    fn.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: `Seal${prefix === 'TOKEN#' ? 'Tokens' : 'Keys'}`,
        actions: [...SEALER_ACTIONS[sealer]],
        resources: [this.key.keyArn],
        conditions: { StringLike: { 'kms:EncryptionContext:pk': `${prefix}*` } },
      }),
    );
  }
}
