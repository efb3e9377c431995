/** AWS credentials as the SigV4 signer needs them (structurally the AWS SDK's `AwsCredentialIdentity`). */
export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
  readonly expiration?: Date;
}

/** A function that resolves credentials, such as the AWS SDK's `fromNodeProviderChain()`. */
export type AwsCredentialsProvider = () => Promise<AwsCredentials>;

/** Time source; tests pass a fake one so that nothing really waits. */
export interface ClientClock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Waits `ms` milliseconds (a fake clock advances itself instead). */
  sleep(ms: number): Promise<void>;
}

/** The `fetch` the client sends its requests with. */
export type FetchFunction = (input: string, init: RequestInit) => Promise<Response>;

export interface TokenVendingClientOptions {
  /**
   * The vend Function URL, e.g. `https://<id>.lambda-url.eu-west-1.on.aws`.
   * Absent, with no `credentials` either: the local stack's (see `localStack`).
   */
  readonly url?: string;
  /**
   * Whether a client given neither `url` nor `credentials` uses the local stack
   * that `npm start` runs in the working directory: the URL, region and
   * identity in `./.local/stack.json`. Default `true` for that case only: a
   * client given a URL or credentials never reads the file. Pass `false` in
   * production code, so that a missing URL is an `invalid_config` error
   * whatever files lie around.
   */
  readonly localStack?: boolean;
  /**
   * SigV4 signing region. Default: the region in a `*.lambda-url.<region>.on.aws` URL,
   * else `AWS_REGION`, else `us-east-1` for loopback URLs.
   */
  readonly region?: string;
  /** Default: the AWS SDK's default provider chain (`fromNodeProviderChain`), loaded on first use. */
  readonly credentials?: AwsCredentials | AwsCredentialsProvider;
  /** Default: the global `fetch`. */
  readonly fetch?: FetchFunction;
  /**
   * Time allowed for one request, answer body included. Default 35000: the vend
   * function's own timeout (30 s), which its slowest successful answer (about
   * 23 s, when a lease holder died mid-refresh) stays within, and a margin.
   */
  readonly timeoutMs?: number;
  /** Retries of a 503 or 429 answer. Default 2. */
  readonly maxRetries?: number;
  /**
   * Longest total time one `getToken` spends once it retries, waits between
   * retries included: a retry starts only if it can get at least 100 ms
   * within it, and gets what is left. The first request is bounded by
   * `timeoutMs` alone; 0 means no retries. Default 35000.
   */
  readonly retryBudgetMs?: number;
  /** Default: real time. */
  readonly clock?: ClientClock;
  /** Jitter of the back-off after a 429: a number in [0, 1). Default `Math.random`. */
  readonly random?: () => number;
}

export interface GetTokenOptions {
  /** Business application id; absent for the unscoped (partner) token. */
  readonly scope?: string;
  /** Seconds the token must still be valid, 0..3600. Default 300. */
  readonly minTtl?: number;
}

/** A bearer token from the vend URL. */
export interface Token {
  readonly accessToken: string;
  /** Always `Bearer`. */
  readonly tokenType: 'Bearer';
  /** Epoch seconds. */
  readonly expiresAt: number;
  /** Present only for scoped tokens. */
  readonly scope?: string;
}

/** What `GET /grants` answers: the caller as the vend function sees it, and what it may have. */
export interface Grants {
  /** The caller's ARN, as the Function URL's IAM check passed it on. */
  readonly principal: string;
  /** The scopes (business application ids) it may have, sorted. */
  readonly scopes: readonly string[];
  /** Whether it may have the unscoped (partner) token. */
  readonly unscoped: boolean;
  /** The access policy version it was judged by, when the answer names one. */
  readonly policyVersion?: string;
}
