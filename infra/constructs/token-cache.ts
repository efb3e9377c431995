import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import { Construct } from 'constructs';
import { LISTING_INDEXES, type ListingIndex } from '../../functions/adapters/table-indexes.js';
import { SynthInputError } from '../config.js';
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

/**
 * CDK context naming the one listing index to create (`tokens`), for the
 * first of two deploys that bring the listing indexes to a table created
 * before them: CloudFormation creates at most one global secondary index per
 * table update (docs/deploying.md, "A stage created before the listing indexes").
 */
export const LISTING_INDEXES_CONTEXT = 'tokenVending:listingIndexes';

export interface TableAccess {
  /** Item actions, allowed only on items whose `pk` starts with `prefix`. */
  readonly items: readonly ItemAction[];
  readonly prefix: ItemPrefix;
  /**
   * Listing indexes the function may Scan (functions/adapters/table-indexes.ts);
   * each lists the items of one prefix only. Default: none. Never the table.
   */
  readonly list?: readonly ListingIndex[];
}

/**
 * KMS actions DynamoDB performs with a caller's credentials on a table
 * encrypted with a customer managed key (the set aws-cdk-lib's table grants
 * give, written out instead of `kms:ReEncrypt*` and `kms:GenerateDataKey*`).
 * Allowed only through DynamoDB (`kms:ViaService`), so no role can use them directly.
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

/**
 * What key administrators may do: manage the key's life, rotation, aliases,
 * tags and grants, and read its policy. Never Encrypt, Decrypt, ReEncrypt or
 * GenerateDataKey (they could unseal tokens), never CreateGrant (a grant could
 * give those to anyone) and never PutKeyPolicy (which could add them): the
 * policy changes only through a deploy, by the deployment role.
 */
export const KEY_ADMINISTRATION_ACTIONS = [
  'kms:CancelKeyDeletion',
  'kms:CreateAlias',
  'kms:DeleteAlias',
  'kms:DescribeKey',
  'kms:DisableKey',
  'kms:DisableKeyRotation',
  'kms:EnableKey',
  'kms:EnableKeyRotation',
  'kms:GetKeyPolicy',
  'kms:GetKeyRotationStatus',
  'kms:ListAliases',
  'kms:ListGrants',
  'kms:ListKeyPolicies',
  'kms:ListKeyRotations',
  'kms:ListResourceTags',
  'kms:RevokeGrant',
  'kms:RotateKeyOnDemand',
  'kms:ScheduleKeyDeletion',
  'kms:TagResource',
  'kms:UntagResource',
  'kms:UpdateAlias',
  'kms:UpdateKeyDescription',
] as const;

export interface TokenCacheProps {
  readonly stage: string;
  /** The role CloudFormation deploys with: it creates the table and may change the key policy. */
  readonly deploymentRoleArn: string;
  /** Roles that manage the key but can never use it. */
  readonly keyAdministratorArns: readonly string[];
  /**
   * Delete the table and schedule the key's deletion with the stack (a
   * throwaway stage). Default: keep both.
   */
  readonly throwaway?: boolean;
}

/**
 * The DynamoDB table (token cache, leases, key-issuing job records) and the
 * customer managed KMS key that encrypts the table and seals, in the
 * functions, cached tokens and recovery copies of issued keys. Both are kept
 * when the stack is deleted: the table may hold the only copy of keys the
 * provider issued (sealed, waiting to be stored), and without the key nothing
 * sealed can be read back.
 *
 * The key's policy is the only authority over the key: it does not delegate
 * to the account (no `arn:...:root` statement), so an IAM policy with
 * `kms:Decrypt` on `*` gives nobody the key. It allows, and nothing else:
 * - the deployment role and the key administrators to manage the key, never
 *   to use it; the deployment role alone to change the policy;
 * - vend and refresh to seal and unseal under `pk` `TOKEN#*` contexts, and
 *   issue-keys under `KEYS#*` (`connectSealer`);
 * - the functions and the deployment role to use it through DynamoDB only
 *   (`kms:ViaService`), for the table's own encryption (`connectTable`);
 * - DynamoDB to read the key's metadata.
 * The statements DynamoDB needs follow "Key policy for a customer managed key"
 * in "How Amazon DynamoDB uses AWS KMS" (AWS KMS Developer Guide,
 * docs.aws.amazon.com/kms/latest/developerguide/services-dynamodb.html):
 * principals that use the table need Encrypt, Decrypt, ReEncrypt*,
 * GenerateDataKey* and DescribeKey through DynamoDB, the principal that creates
 * the table also CreateGrant (DynamoDB keeps grants for background work), and
 * the `dynamodb.amazonaws.com` service principal Describe*, Get* and List*.
 */
export class TokenCache extends Construct {
  readonly table: dynamodb.Table;
  readonly key: kms.Key;
  /** Key policy statements that `connectTable` and `connectSealer` add principals to. */
  readonly #throughDynamoDb: iam.PolicyStatement;
  readonly #sealing = new Map<ItemPrefix, { statement: iam.PolicyStatement; sealer: Sealer }>();
  /** The listing indexes this table has (all of them, unless the context names fewer). */
  readonly #indexes: readonly ListingIndex[];

  constructor(scope: Construct, id: string, props: TokenCacheProps) {
    super(scope, id);
    this.#indexes = chosenIndexes(this.node.tryGetContext(LISTING_INDEXES_CONTEXT));
    const { account, region } = Stack.of(this);
    const deployment = new iam.ArnPrincipal(props.deploymentRoleArn);
    const administrators = [
      deployment,
      ...props.keyAdministratorArns.map((arn) => new iam.ArnPrincipal(arn)),
    ];
    const viaDynamoDb = {
      'kms:ViaService': `dynamodb.${region}.amazonaws.com`,
      'kms:CallerAccount': account,
    };
    this.#throughDynamoDb = new iam.PolicyStatement({
      sid: 'UseThroughDynamoDBOnly',
      principals: [deployment],
      actions: KMS_VIA_DYNAMODB,
      resources: ['*'],
      conditions: { StringEquals: viaDynamoDb },
    });
    const policy = new iam.PolicyDocument({
      statements: [
        new iam.PolicyStatement({
          sid: 'AdministerNeverUse',
          principals: administrators,
          actions: [...KEY_ADMINISTRATION_ACTIONS],
          resources: ['*'],
        }),
        new iam.PolicyStatement({
          sid: 'PolicyChangesByDeploymentOnly',
          principals: [deployment],
          actions: ['kms:PutKeyPolicy'],
          resources: ['*'],
        }),
        new iam.PolicyStatement({
          sid: 'TableCreationThroughDynamoDB',
          principals: [deployment],
          actions: ['kms:CreateGrant'],
          resources: ['*'],
          conditions: {
            StringEquals: viaDynamoDb,
            Bool: { 'kms:GrantIsForAWSResource': 'true' },
          },
        }),
        this.#throughDynamoDb,
        new iam.PolicyStatement({
          sid: 'DynamoDBReadsKeyMetadata',
          principals: [new iam.ServicePrincipal('dynamodb.amazonaws.com')],
          actions: ['kms:Describe*', 'kms:Get*', 'kms:List*'],
          resources: ['*'],
        }),
      ],
    });
    this.key = new kms.Key(this, 'Key', {
      policy,
      alias: `alias/token-vending-${props.stage}`,
      description: `token-vending ${props.stage}: encrypts the table, seals cached tokens and recovery copies of issued keys`,
      enableKeyRotation: true,
      pendingWindow: Duration.days(props.throwaway ? 7 : 30),
      removalPolicy: props.throwaway ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
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
      deletionProtection: !props.throwaway,
      removalPolicy: props.throwaway ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
    });
    // Sparse listing indexes, so refresh and admin list their items without a
    // Scan of the table (which no IAM condition can limit to a key prefix).
    for (const index of this.#indexes) {
      this.table.addGlobalSecondaryIndex({
        indexName: index.name,
        partitionKey: { name: index.key, type: dynamodb.AttributeType.STRING },
        ...(index.attributes
          ? {
              projectionType: dynamodb.ProjectionType.INCLUDE,
              nonKeyAttributes: [...index.attributes],
            }
          : { projectionType: dynamodb.ProjectionType.ALL }),
      });
    }
  }

  /**
   * Sets TABLE_NAME and grants exactly `access`: item actions limited to one
   * key prefix, Scan of the listing indexes asked for, and the KMS use
   * DynamoDB makes of the table key on the caller's behalf.
   *
   * Item actions carry `ForAllValues:StringLike` on `dynamodb:LeadingKeys`,
   * the partition key values a request names ("Using IAM policy conditions for
   * fine-grained access control",
   * docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html).
   * A Scan names no key, so no such condition can limit it: a Scan on the table
   * would read every item. Scan is granted on index ARNs
   * (`<table ARN>/index/<name>`) instead, a resource of its own that a grant on
   * the table does not cover, nor the other way round ("IAM policy to grant
   * access to a specific DynamoDB table and its indexes",
   * docs.aws.amazon.com/amazondynamodb/latest/developerguide/iam-policy-specific-table-indexes.html);
   * each index holds one prefix's items only, the key-jobs index without
   * their secrets (table-indexes.ts).
   */
  connectTable(fn: TokenVendingFunction, access: TableAccess): void {
    // An index the table does not have yet (LISTING_INDEXES_CONTEXT) is granted with it.
    const lists = (access.list ?? []).filter((index) => this.#indexes.includes(index));
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
    if (lists.length > 0) {
      fn.role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          sid: 'ListThroughIndexes',
          actions: ['dynamodb:Scan'],
          resources: lists.map((index) => `${this.table.tableArn}/index/${index.name}`),
        }),
      );
    }
    // The table's encryption, through DynamoDB only: in the key policy.
    this.#throughDynamoDb.addPrincipals(fn.role);
  }

  /**
   * Sets KMS_KEY_ID and allows, in the key policy, the two KMS operations of
   * the function's sealer, only under the encryption context `{pk}` of the
   * items the function owns (each item is sealed under its own key). One
   * statement per prefix: a sealer's actions must be the same for every
   * function that seals that prefix.
   */
  connectSealer(fn: TokenVendingFunction, prefix: ItemPrefix, sealer: Sealer): void {
    fn.addEnvironment('KMS_KEY_ID', this.key.keyArn);
    const existing = this.#sealing.get(prefix);
    if (existing) {
      if (existing.sealer !== sealer) {
        throw new Error(`${prefix} items are sealed with ${existing.sealer}, not ${sealer}`);
      }
      existing.statement.addPrincipals(fn.role);
      return;
    }
    const statement = new iam.PolicyStatement({
      sid: `Seal${prefix === 'TOKEN#' ? 'Tokens' : 'Keys'}`,
      principals: [fn.role],
      actions: [...SEALER_ACTIONS[sealer]],
      resources: ['*'],
      conditions: { StringLike: { 'kms:EncryptionContext:pk': `${prefix}*` } },
    });
    this.#sealing.set(prefix, { statement, sealer });
    this.key.addToResourcePolicy(statement);
  }
}

/** The listing indexes a context value names (comma-separated), or all of them when unset. */
function chosenIndexes(value: unknown): readonly ListingIndex[] {
  if (value === undefined) return LISTING_INDEXES;
  const names = String(value)
    .split(',')
    .map((name) => name.trim());
  const unknown = names.filter((name) => !LISTING_INDEXES.some((index) => index.name === name));
  if (unknown.length > 0) {
    throw new SynthInputError(
      `${LISTING_INDEXES_CONTEXT}: no listing index ${unknown.join(', ')} (there are ${LISTING_INDEXES.map((i) => i.name).join(', ')})`,
    );
  }
  return LISTING_INDEXES.filter((index) => names.includes(index.name));
}
