/**
 * One base error for everything the vend path can answer with. Each subclass
 * sets a literal `name` (minifiers rename classes) and the vend API code.
 * Messages never carry a token, key, secret or Authorization header.
 */
export type ProblemCode =
  | 'invalid_request'
  | 'unauthenticated'
  | 'access_denied'
  | 'not_found'
  | 'method_not_allowed'
  | 'upstream_credentials_rejected'
  | 'upstream_error'
  | 'upstream_unavailable'
  | 'internal_error';

export class VendError extends Error {
  override name = 'VendError';
  readonly code: ProblemCode;
  readonly status: number;
  readonly title: string;

  constructor(
    code: ProblemCode,
    status: number,
    title: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(detail, options);
    this.code = code;
    this.status = status;
    this.title = title;
  }
}

export class InvalidRequestError extends VendError {
  override name = 'InvalidRequestError';
  constructor(detail: string) {
    super('invalid_request', 400, 'Invalid request', detail);
  }
}

export class UnauthenticatedError extends VendError {
  override name = 'UnauthenticatedError';
  constructor(detail = 'The request carries no IAM identity.') {
    super('unauthenticated', 401, 'Unauthenticated', detail);
  }
}

export class AccessDeniedError extends VendError {
  override name = 'AccessDeniedError';
  constructor(detail = 'The caller is not granted this scope.') {
    super('access_denied', 403, 'Access denied', detail);
  }
}

export class NotFoundError extends VendError {
  override name = 'NotFoundError';
  constructor(detail = 'No such resource.') {
    super('not_found', 404, 'Not found', detail);
  }
}

export class MethodNotAllowedError extends VendError {
  override name = 'MethodNotAllowedError';
  readonly allow: string;
  constructor(allow: string) {
    super('method_not_allowed', 405, 'Method not allowed', `Use ${allow}.`);
    this.allow = allow;
  }
}

export class UpstreamCredentialsRejectedError extends VendError {
  override name = 'UpstreamCredentialsRejectedError';
  constructor(detail: string, options?: { cause?: unknown }) {
    super(
      'upstream_credentials_rejected',
      502,
      'Provider rejected our credentials',
      detail,
      options,
    );
  }
}

export class UpstreamError extends VendError {
  override name = 'UpstreamError';
  constructor(detail: string, options?: { cause?: unknown }) {
    super('upstream_error', 502, 'Provider answered unexpectedly', detail, options);
  }
}

export class UpstreamUnavailableError extends VendError {
  override name = 'UpstreamUnavailableError';
  /** Seconds the caller should wait before trying again. */
  readonly retryAfter: number;
  constructor(detail: string, retryAfter = 5, options?: { cause?: unknown }) {
    super('upstream_unavailable', 503, 'Provider unavailable', detail, options);
    this.retryAfter = retryAfter;
  }
}

export class InternalError extends VendError {
  override name = 'InternalError';
  constructor(options?: { cause?: unknown }) {
    super('internal_error', 500, 'Internal error', 'An internal error occurred.', options);
  }
}

/** A configuration problem found at start-up; the function refuses to start. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * An access policy document that fails its checks: every problem, each naming
 * its path and what was expected. No value of the document but scope and
 * business application ids (a secret pasted by mistake would reach the log).
 */
export class PolicyInvalidError extends ConfigError {
  readonly problems: readonly string[];

  constructor(source: string, problems: readonly string[]) {
    super(`${source} is invalid: ${problems.join('; ')}`);
    this.problems = problems;
  }
}

/** The shared cache (DynamoDB) failed; the core falls back to degraded mode. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
  /**
   * DynamoDB refused the call for throughput (a hot item, or the table's
   * limits), as opposed to being unreachable or failing: the store works.
   */
  readonly throttled: boolean;

  constructor(message: string, options: ErrorOptions & { throttled?: boolean } = {}) {
    super(message, options);
    this.throttled = options.throttled ?? false;
  }
}

/**
 * The sealer (KMS) cannot answer now: throttled, timing out or failing, as
 * opposed to a blob it cannot unseal. Without it the shared cache can neither
 * give its tokens nor take new ones, so the core serves as it does without
 * DynamoDB (degraded mode), rather than treat a good stored token as a miss
 * and have every instance re-mint over it.
 */
export class SealerUnavailableError extends StoreUnavailableError {
  override name = 'SealerUnavailableError';
}

/**
 * A stored blob sealed under another key than the one now configured (KMS
 * `IncorrectKeyException`): what every item written before a change of the
 * cache key gives once. The item is a miss and is re-minted under the new
 * key; nothing is wrong with the key in use, so it is counted apart
 * (`OtherKeyItems`), not as an unseal failure, which pages.
 */
export class SealedUnderOtherKeyError extends Error {
  override name = 'SealedUnderOtherKeyError';
}

/**
 * The provider credentials cannot be read now (Secrets Manager unreachable, or
 * a forced re-read failed). The core serves what it can verify without them
 * and otherwise answers 503; it never becomes a 500.
 */
export class CredentialsUnavailableError extends Error {
  override name = 'CredentialsUnavailableError';
}

/**
 * The 503 a caller gets when the credentials secret cannot be read: the vend
 * API's `upstream_unavailable`, but no fault of the provider's (no request
 * reached it), so the refresh function does not excuse it as one.
 */
export class CredentialsUnreadableError extends UpstreamUnavailableError {
  override name = 'CredentialsUnreadableError';
}

/** The 503 for a secret that cannot be read and no token to serve without it. */
export function credentialsUnavailable(): UpstreamUnavailableError {
  return new CredentialsUnreadableError(
    'The provider credentials cannot be read right now; try again shortly.',
    5,
  );
}
