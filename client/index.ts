export { systemClock } from './clock.js';
export { TokenVendingError, type TokenVendingErrorCode } from './errors.js';
export { resolveRegion } from './region.js';
export {
  DEFAULT_MAX_RETRIES,
  DEFAULT_MIN_TTL,
  DEFAULT_RETRY_BUDGET_MS,
  DEFAULT_TIMEOUT_MS,
  TokenVendingClient,
} from './token-vending-client.js';
export type {
  AwsCredentials,
  AwsCredentialsProvider,
  ClientClock,
  FetchFunction,
  GetTokenOptions,
  Grants,
  Token,
  TokenVendingClientOptions,
} from './types.js';
