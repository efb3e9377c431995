import type { Token } from './types.js';

/** The vend API's 200 body. */
export interface VendBody {
  readonly access_token: string;
  readonly token_type: 'Bearer';
  /** Whole seconds left at `nowMs`. */
  readonly expires_in: number;
  /** Epoch seconds. */
  readonly expires_at: number;
  /** Present only for scoped tokens. */
  readonly scope?: string;
}

/** A token as the vend API's 200 body, `expires_in` counted from `nowMs`. */
export function vendBody(token: Token, nowMs: number): VendBody {
  return {
    access_token: token.accessToken,
    token_type: token.tokenType,
    expires_in: Math.max(0, Math.floor(token.expiresAt - nowMs / 1000)),
    expires_at: token.expiresAt,
    ...(token.scope !== undefined ? { scope: token.scope } : {}),
  };
}
