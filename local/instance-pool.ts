/**
 * `LOCAL_INSTANCES`: the local URL spreads requests over several instances of
 * the vend handler, as Lambda spreads concurrent requests over instances. Each
 * has its own memory (L1, in-flight lookups, instance id); all share the
 * table and the sealing key, as Lambda's instances share DynamoDB and KMS. So
 * the cross-instance path (the lease, its single mint, the waiters) runs on
 * one machine.
 */
import type { VendRuntime } from '../functions/vend-token/runtime.js';
import type { UrlHandler } from './function-url.js';

export const MAX_LOCAL_INSTANCES = 64;

export interface InstancePool {
  readonly instances: readonly VendRuntime[];
  /** Request k goes to instance k mod n: concurrent requests land on different instances. */
  readonly handler: UrlHandler;
  /**
   * Forgets what every instance holds in memory for these scopes (the admin
   * naming: `unscoped` is the partner token), or for all of them.
   */
  forget(target: { readonly all: true } | { readonly scopes: readonly string[] }): void;
}

export function createInstancePool(
  count: number,
  make: (index: number) => VendRuntime,
): InstancePool {
  const instances = Array.from({ length: count }, (_, index) => make(index));
  let next = 0;
  const handler: UrlHandler = (event) => {
    const instance = instances[next] as VendRuntime;
    next = (next + 1) % instances.length;
    return instance.app(event);
  };
  return {
    instances,
    handler,
    forget(target) {
      for (const { tokens } of instances) {
        if ('all' in target) tokens.forget();
        else
          for (const scope of target.scopes)
            tokens.forgetScope(scope === 'unscoped' ? undefined : scope);
      }
    },
  };
}
