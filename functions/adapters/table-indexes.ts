/**
 * The cache table's two sparse global secondary indexes: the only way any
 * function lists items. The refresh and admin roles may Scan these indexes,
 * never the table, so what an index holds is all they can list. The CDK
 * construct (infra/constructs/token-cache.ts) and the local stack
 * (local/table.ts) create both from these definitions.
 *
 * Sparse: DynamoDB writes an item into a global secondary index only when the
 * item has the index's key attribute ("Take advantage of sparse indexes",
 * docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-indexes-general-sparse-indexes.html).
 * Each index is keyed by an attribute that only one kind of item carries, one
 * value per item, and is read with Scan. A Query would need one key value
 * shared by every item, which puts every write of the items on one index
 * partition; a throttled index partition throttles the writes to the table
 * itself ("GSI write throttling and back pressure",
 * docs.aws.amazon.com/amazondynamodb/latest/developerguide/gsi-throttling.html),
 * here the vend path's leases.
 */

/** What a listing index holds; the index key and the table's `pk` are always projected. */
export interface ListingIndex {
  readonly name: string;
  /** The index's partition key (a string): present on exactly the items the index lists. */
  readonly key: string;
  /** Non-key attributes copied into the index (INCLUDE), or all of them when absent. */
  readonly attributes?: readonly string[];
}

/**
 * Every `TOKEN#` item, all attributes. `token_pk` (a copy of `pk`) is written
 * by every write that can create a token item or mark it used
 * (dynamodb-token-store.ts), never on a `KEYS#` item. An item written before
 * the index existed joins it at its next lease, stored token or use mark.
 */
export const TOKEN_INDEX: ListingIndex = { name: 'tokens', key: 'token_pk' };

/**
 * Every `KEYS#` item, with its non-secret status attributes only: never the
 * Idempotency-Key (replayed to the provider with a token, it could fetch the
 * issued keys again), the sealed recovery copy, the run's write ids or the
 * forced requests. A Scan of a global secondary index returns only what the
 * index projects: it cannot fetch other attributes from the table (the
 * `Select` parameter of Scan, docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_Scan.html;
 * "Projection", docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_Projection.html).
 * `sealed_encoding` (`utf8` or `base64`) is written and removed together with
 * the sealed copy, so it tells "an answer waits to be stored" without it.
 * Keyed by `business_application_id`, which every job record has carried
 * since the first version (the job's lease write sets it), and no token item
 * has: DynamoDB fills a new index from the items already in the table
 * ("backfilling", docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.OnlineOps.html).
 */
export const KEY_JOB_INDEX: ListingIndex = {
  name: 'key-jobs',
  key: 'business_application_id',
  attributes: [
    'state',
    'attempts',
    'issue_count',
    'last_error',
    'last_error_at',
    'stored_at',
    'secret_name',
    'lease_until',
    'sealed_encoding',
  ],
};

export const LISTING_INDEXES: readonly ListingIndex[] = [TOKEN_INDEX, KEY_JOB_INDEX];
