/** Item key of a scope's token; `~` cannot start a scope, so the keys never collide. */
export const tokenKey = (scope: string | undefined): string =>
  scope === undefined ? 'TOKEN#~unscoped' : `TOKEN#${scope}`;

/** The scope an item key stands for (undefined: unscoped), or null for a key that is not a token's. */
export function scopeOfKey(pk: string): string | undefined | null {
  if (pk === 'TOKEN#~unscoped') return undefined;
  return pk.startsWith('TOKEN#') ? pk.slice('TOKEN#'.length) : null;
}
