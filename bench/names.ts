/** The variants the bench compares, and the product settings it runs with. */

export type VariantName = 'ours' | 'no-cache' | 'memory-only' | 'dynamodb-no-lease';

export const VARIANTS: readonly VariantName[] = [
  'ours',
  'no-cache',
  'memory-only',
  'dynamodb-no-lease',
];

export const VARIANT_LABELS: Record<VariantName, string> = {
  ours: 'token service (L1 + L2 + lease)',
  'no-cache': 'no cache (mint per request)',
  'memory-only': 'per-instance memory cache',
  'dynamodb-no-lease': 'DynamoDB cache, no lease',
};

/** The schedule of the refresh function: every 5 minutes. */
export const REFRESH_INTERVAL_SECONDS = 300;
/** The vend function's default refresh-ahead window. */
export const REFRESH_AHEAD_SECONDS = 900;
