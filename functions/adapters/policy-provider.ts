import { AppConfigDataClient } from '@aws-sdk/client-appconfigdata';
import { type Clock, systemClock } from '../core/clock.js';
import type { PolicySettings } from '../core/config.js';
import {
  inlinePolicy,
  type PolicyMetric,
  type PolicyProvider,
  PolicySource,
} from '../core/policy-source.js';
import type { CoreLogger } from '../core/token-service-types.js';
import { appConfigDocumentFetcher } from './appconfig-policy.js';
import { boundedCalls } from './aws-client-options.js';

export interface PolicyProviderDeps {
  readonly logger: CoreLogger;
  readonly count?: (metric: PolicyMetric) => void;
  readonly clock?: Clock;
  /** Default: a client with short timeouts, so a slow AppConfig never holds a vend long. */
  readonly client?: AppConfigDataClient;
}

/**
 * The access policy as a Lambda function reads it: from AWS AppConfig, fetched
 * at most every `POLICY_MAX_AGE_SECONDS`, or the inline `ACCESS_POLICY`.
 */
export function policyProviderFor(
  settings: PolicySettings,
  deps: PolicyProviderDeps,
): PolicyProvider {
  const clock = deps.clock ?? systemClock;
  if (settings.kind === 'inline') return inlinePolicy(settings.policy, settings.text, clock.now());
  const client =
    deps.client ??
    new AppConfigDataClient(boundedCalls({ requestTimeoutMs: 1000, maxAttempts: 2 }));
  const { application, environment, profile } = settings;
  return new PolicySource({
    fetch: appConfigDocumentFetcher(
      client,
      { application, environment, profile },
      { intervalSeconds: settings.maxAgeSeconds, now: () => clock.now() },
    ),
    source: `AppConfig ${application}/${environment}/${profile}`,
    maxAgeSeconds: settings.maxAgeSeconds,
    clock,
    logger: deps.logger,
    ...(deps.count ? { count: deps.count } : {}),
    fixedGrants: settings.fixedGrants,
  });
}
