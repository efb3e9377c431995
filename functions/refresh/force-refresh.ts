import type { RefreshOutcome } from '../admin/admin.js';
import { scopeName } from '../core/item-keys.js';
import type { TokenService } from '../core/token-service.js';

/**
 * An operator's forced refresh of one scope, under the vend path's lease:
 * `busy` when another caller holds it. Used by the refresh function (the
 * admin function's `refresh` in AWS) and by the local admin.
 */
export async function forceRefresh(
  tokens: Pick<TokenService, 'refresh'>,
  scope: string | undefined,
): Promise<RefreshOutcome> {
  const label = scopeName(scope);
  const result = await tokens.refresh(scope);
  return result.status === 'busy'
    ? { scope: label, status: 'busy' }
    : { scope: label, status: 'refreshed', expires_at: result.expiresAt };
}
