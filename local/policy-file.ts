/**
 * The local stack's access policy: `ACCESS_POLICY_FILE` (re-read when it
 * changes, at most every `POLICY_REFRESH_SECONDS`), the inline `ACCESS_POLICY`,
 * or the demo policy. A file edit goes through the same check as AppConfig's
 * validator; an invalid one is logged with every problem and leaves the
 * previous policy in force.
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { AccessPolicy } from '../functions/core/access-policy.js';
import type { Clock } from '../functions/core/clock.js';
import type { EnvReader } from '../functions/core/config.js';
import { ConfigError } from '../functions/core/errors.js';
import {
  inlinePolicy,
  type PolicyProvider,
  PolicySource,
} from '../functions/core/policy-source.js';
import type { CoreLogger } from '../functions/core/token-service-types.js';

export type LocalPolicy =
  | { readonly kind: 'fixed'; readonly policy: AccessPolicy; readonly text: string }
  | {
      readonly kind: 'file';
      /** Absolute path. */
      readonly path: string;
      readonly refreshSeconds: number;
      /** The file's policy at start (a stack refuses to start on an invalid one). */
      readonly policy: AccessPolicy;
      readonly text: string;
    };

/**
 * Reads `ACCESS_POLICY_FILE` (with `POLICY_REFRESH_SECONDS`) or `ACCESS_POLICY`
 * through `reader`; `fallback` gives the demo policy's text when neither is
 * set. Problems go to the reader; undefined when the policy is unusable.
 */
export function readLocalPolicy(
  reader: EnvReader,
  fallback: () => string,
): LocalPolicy | undefined {
  const file = reader.optional('ACCESS_POLICY_FILE', '');
  const inline = reader.optional('ACCESS_POLICY', '');
  const refreshSeconds = reader.integer('POLICY_REFRESH_SECONDS', 60, 1, 3600);
  if (file && inline) {
    reader.problem('set ACCESS_POLICY or ACCESS_POLICY_FILE, not both');
    return undefined;
  }
  if (!file) {
    const text = inline || fallback();
    try {
      return { kind: 'fixed', policy: AccessPolicy.parse(text, 'ACCESS_POLICY'), text };
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      reader.problem(error.message);
      return undefined;
    }
  }
  const path = resolve(file);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    reader.problem(
      `ACCESS_POLICY_FILE cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    );
    return undefined;
  }
  try {
    const policy = AccessPolicy.parse(text, `ACCESS_POLICY_FILE ${file}`);
    return { kind: 'file', path, refreshSeconds, policy, text };
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    reader.problem(error.message);
    return undefined;
  }
}

/** The policy provider of a local stack or `npm run admin`. */
export function localPolicyProvider(
  local: LocalPolicy,
  deps: { readonly clock: Clock; readonly logger: CoreLogger },
): PolicyProvider {
  return localPolicy(local, deps).provider;
}

/**
 * The policy provider, and the text of the version it keeps in force (the
 * stack's control endpoint hands it to `npm run admin` while the file holds an
 * invalid edit).
 */
export function localPolicy(
  local: LocalPolicy,
  deps: { readonly clock: Clock; readonly logger: CoreLogger },
): { readonly provider: PolicyProvider; readonly textInForce: () => Promise<string | undefined> } {
  if (local.kind === 'fixed') {
    return {
      provider: inlinePolicy(local.policy, local.text, deps.clock.now()),
      textInForce: async () => local.text,
    };
  }
  const source = new PolicySource({
    fetch: async () => ({ text: await readFile(local.path, 'utf8') }),
    source: `ACCESS_POLICY_FILE ${local.path}`,
    maxAgeSeconds: local.refreshSeconds,
    clock: deps.clock,
    logger: deps.logger,
  });
  return {
    provider: source,
    textInForce: async () => {
      await source.current();
      return source.loadedText;
    },
  };
}
