export {
  assertBusinessApplicationId,
  BUSINESS_APPLICATION_ID_PATTERN,
  isBusinessApplicationId,
  keyJobKey,
} from './business-application-id.js';
export {
  type KeyIssuingSettings,
  parseBusinessApplicationIds,
  readKeyIssuingSettings,
} from './config.js';
export {
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
} from './errors.js';
export { EXPECTED_EVENT, type KeyIssuingRequest, parseKeyIssuingEvent } from './event.js';
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
