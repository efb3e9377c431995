/** Item key of a scope's token; `~` cannot start a scope, so the keys never collide. */
export const tokenKey = (scope: string | undefined): string =>
  scope === undefined ? 'TOKEN#~unscoped' : `TOKEN#${scope}`;

/** The scope an item key stands for (undefined: unscoped), or null for a key that is not a token's. */
export function scopeOfKey(pk: string): string | undefined | null {
  if (pk === 'TOKEN#~unscoped') return undefined;
  return pk.startsWith('TOKEN#') ? pk.slice('TOKEN#'.length) : null;
}

/** How operators, reports and admin events name the unscoped (partner) token. */
export const UNSCOPED_LABEL = 'unscoped';

/** A scope as operators see it: itself, or `unscoped`. */
export const scopeName = (scope: string | undefined): string => scope ?? UNSCOPED_LABEL;

/** How operators see an item key: its scope, `unscoped`, or the key itself for any other item. */
export function scopeLabel(pk: string): string {
  const scope = scopeOfKey(pk);
  return scope === null ? pk : scopeName(scope);
}
