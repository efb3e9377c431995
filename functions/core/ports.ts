/**
 * The small interfaces the core needs. Adapters in `functions/adapters`
 * implement them with AWS SDK clients; tests and the local stack use others.
 */

/** The provider key and secret, and the Secrets Manager version they came from. */
export interface ProviderCredentials {
  readonly key: string;
  readonly secret: string;
  /** Identifies the secret version; tokens minted under an older one are re-minted. */
  readonly version: string;
}

export interface CredentialsSource {
  /**
   * Returns cached credentials. `forceRefresh` re-reads the secret now (after
   * a 401, or to learn whether a version seen in the cache is the current one).
   * @throws CredentialsUnavailableError when nothing was ever read, or when a
   *   forced re-read fails: the cached value is then not known to be current.
   */
  get(options?: { forceRefresh?: boolean }): Promise<ProviderCredentials>;
}

/**
 * Seals tokens before they reach the table; `context` binds the blob to its item key.
 * Both throw SealerUnavailableError when the sealer cannot answer now (KMS
 * throttled or unreachable); the core then serves degraded.
 */
export interface Sealer {
  seal(plaintext: string, context: string): Promise<Uint8Array>;
  /** Throws another error when the blob cannot be unsealed (another key or context, corrupt). */
  unseal(sealed: Uint8Array, context: string): Promise<string>;
}

/** A token as the core handles it. Times are epoch seconds. */
export interface Token {
  readonly accessToken: string;
  readonly tokenType: 'Bearer';
  /** Absent for the unscoped (partner) token. */
  readonly scope?: string;
  readonly issuedAt: number;
  readonly expiresAt: number;
  /** The provider's created_at, normalised to epoch seconds, when it sent one. */
  readonly providerCreatedAt?: number;
  readonly credentialsVersion: string;
  /**
   * Minted because a caller reported the token before it as revoked: such a
   * token is not replaced again on a report until the reading instance has
   * known it for a minute by its own clock (revocation.ts), so reports cause
   * at most one mint a minute per scope across all instances.
   */
  readonly replacesRevoked?: boolean;
  /**
   * How long the mint took, in milliseconds on the minter's own clock (a
   * duration, so comparable across instances): waiters shape their polls by it.
   */
  readonly mintMs?: number;
}

/**
 * Which token an item held when it was read. Lease conditions compare it, so
 * nobody re-mints (or overwrites) a token another caller stored meanwhile.
 * It is read from the item's attributes whether or not its token part is
 * usable, so an item the core cannot use is still replaceable.
 */
export interface Revision {
  /** The item's `expires_at` as a number, or null. */
  readonly expiresAt: number | null;
  /**
   * The sealed token's bytes, or null. Every seal is randomized (a fresh IV
   * or data key), so two stores differ even for tokens minted in the same
   * second with the same lifetime, which `expires_at` cannot tell apart.
   */
  readonly sealed: Uint8Array | null;
}

/** The revision of an item that holds no token (or of no item). */
export const NO_REVISION: Revision = { expiresAt: null, sealed: null };

/** A cache item as stored: the token sealed, the lease beside it. */
export interface StoredItem {
  readonly pk: string;
  /** The token part, when it is complete; an item with a broken one has none. */
  readonly token?: Omit<Token, 'accessToken'> & { readonly sealed: Uint8Array };
  /** Which token the item held when read: see Revision. */
  readonly revision: Revision;
  readonly leaseOwner?: string;
  /** Epoch milliseconds. */
  readonly leaseUntil?: number;
  /** The last failed refresh, so waiters stop waiting and callers back off. */
  readonly failure?: RefreshFailure;
  /**
   * When some instance marked this scope vended (epoch seconds): the first vend
   * of each token writes it (use-marks.ts); the scheduled refresh keeps scopes
   * whose current token was vended ("in use") fresh.
   */
  readonly lastUsedAt?: number;
}

/** A failed refresh, recorded when the lease is given up. */
export interface RefreshFailure {
  /** Epoch milliseconds. */
  readonly atMs: number;
  /** The vend API error code, so callers in the back-off get the same answer. */
  readonly code: string;
  /**
   * How long the provider asked to be left alone (its Retry-After, at most
   * 60 s), when that is longer than the usual back-off: every instance backs
   * off that long, not only the caller that got the answer.
   */
  readonly retryAfterSeconds?: number;
}

/** A lease as read: its owner and its end, on the owner's clock (epoch ms). */
export interface LeaseHolder {
  readonly owner?: string;
  readonly untilMs: number;
}

/**
 * Which held lease an acquirer may take besides a free one: exactly `holder`
 * (seen unchanged for a whole lease period by the acquirer's own clock),
 * whatever its `lease_until` says. Never one because its end looks past: that
 * end is on the holder's clock (lease-watch.ts).
 */
export interface LeaseTakeover {
  readonly holder?: LeaseHolder;
}

/**
 * What `leaseIfAbsent` found: the item (undefined only if it was deleted
 * between the refused write and a read), or none and this caller's new lease.
 */
export type FirstLook =
  | { readonly leased: true; readonly item?: undefined }
  | { readonly leased: false; readonly item: StoredItem | undefined };

/** The shared (L2) token cache and its leases. Any method may throw a StoreUnavailableError. */
export interface TokenStore {
  /** Strongly consistent read of one item. */
  get(pk: string): Promise<StoredItem | undefined>;
  /**
   * Takes the lease when it is absent or unreadable, or one `takeover` allows
   * (by default none: a held lease is never judged by `nowMs`), and, when `seenRevision` is given, only while the item's `revision` is
   * still the one the caller read, so nobody re-mints (or overwrites) a token
   * another caller just stored. False when the lease is held or the token
   * changed; true when the item holds exactly this lease (owner and end): a
   * retry after a lost answer, so callers never reuse an end.
   */
  tryAcquireLease(
    pk: string,
    owner: string,
    nowMs: number,
    untilMs: number,
    seenRevision?: Revision,
    takeover?: LeaseTakeover,
  ): Promise<boolean>;
  /**
   * A cold instance's first look at an item, in one call: when there is no
   * item at all, creates it holding this lease (as `tryAcquireLease` with
   * `seenRevision` null would) and answers `leased`; otherwise changes
   * nothing and answers the item as it is, strongly consistent (or `leased`
   * when it holds exactly this lease: a retry after a lost answer). In a cold
   * stampede each instance then makes one call before the winner mints, not
   * a read and a lease attempt.
   */
  leaseIfAbsent(pk: string, owner: string, nowMs: number, untilMs: number): Promise<FirstLook>;
  /**
   * Stores a freshly minted token and clears the lease if `owner` still holds
   * it (and, given `leaseUntil`, still that very lease: one the same owner
   * took over meanwhile is another). Returns false (and writes nothing) when
   * the lease was taken over.
   * `usedAt`: the token is minted for a vend, so the same write marks the scope
   * used then (`lastUsedAt`), sparing the vend and its waiters a mark each.
   */
  putToken(
    pk: string,
    token: StoredItem['token'] & object,
    owner: string,
    options?: { readonly usedAt?: number; readonly leaseUntil?: number },
  ): Promise<boolean>;
  /**
   * Gives the lease up without a new token, recording the failure when there
   * was one; only `owner`'s lease (given `leaseUntil`, only that very lease).
   */
  releaseLease(
    pk: string,
    owner: string,
    failure?: RefreshFailure,
    leaseUntil?: number,
  ): Promise<void>;
  /**
   * Records that the scope was vended at `atSeconds`, on an item that exists
   * (a missing item is left missing). Never raises `lastUsedAt`'s value back.
   */
  markUsed(pk: string, atSeconds: number): Promise<void>;
  /** Removes an item (operator invalidation); false when there was none to remove. */
  delete(pk: string): Promise<boolean>;
  /**
   * Every token item (operator status, the scheduled refresh), eventually
   * consistent: an item written a moment ago may be missing.
   */
  list(): Promise<StoredItem[]>;
}
