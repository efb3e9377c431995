export {
  assertBusinessApplicationId,
  BUSINESS_APPLICATION_ID_PATTERN,
  isBusinessApplicationId,
  keyJobKey,
} from './business-application-id.js';
export type { ClearPendingKeyResult } from './clear-pending-key.js';
export {
  type KeyIssuingSettings,
  parseBusinessApplicationIds,
  readKeyIssuingSettings,
} from './config.js';
export {
  ConfiguredIdsUnavailableError,
  type FailureCode,
  InvalidKeyIssuingRequestError,
  type KeyIssuingCode,
  KeyIssuingError,
  KeyIssuingFailedError,
  type KeyIssuingFailure,
  type KeyIssuingResult,
  KeyJobStoreError,
  KeysEndpointError,
  KeyVaultError,
  LeaseLostError,
  PendingKeyNotClearedError,
  type PendingKeyRefusal,
} from './errors.js';
export {
  type ClearPendingKeyRequest,
  EXPECTED_CLEAR_EVENT,
  EXPECTED_EVENT,
  FORCE_ID_PATTERN,
  isClearPendingKeyEvent,
  type KeyIssuingRequest,
  MAX_REASON_LENGTH,
  parseClearPendingKeyEvent,
  parseKeyIssuingEvent,
} from './event.js';
export {
  createKeyIssuingJob,
  DEFAULT_LEASE_MS,
  type KeyIssuingJob,
  type KeyIssuingJobConfig,
  type KeyIssuingJobDeps,
  type KeyIssuingRunOptions,
} from './job.js';
export type {
  KeyJobMetric,
  KeyJobRecord,
  KeyJobState,
  KeyJobStore,
  KeyVault,
  SealedEncoding,
  UnscopedTokenSource,
} from './ports.js';
export { MAX_FORCED_REQUESTS } from './ports.js';
