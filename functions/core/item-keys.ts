/** Item key of a scope's token; `~` cannot start a scope, so the keys never collide. */
export const tokenKey = (scope: string | undefined): string =>
  scope === undefined ? 'TOKEN#~unscoped' : `TOKEN#${scope}`;
