import { AccessPolicy } from '../core/access-policy.js';

/** What AWS AppConfig sends a Lambda validator (AppConfig User Guide, "Understanding validators"). */
export interface AppConfigValidationEvent {
  readonly applicationId?: string;
  readonly configurationProfileId?: string;
  readonly configurationVersion?: string;
  /** The document, base64-encoded. */
  readonly content?: string;
  readonly uri?: string;
}

/**
 * The deploy-time check of an access policy version: the same
 * `AccessPolicy.parse` the functions run when they load it, so a version
 * AppConfig lets through is one every function accepts. Throws a ConfigError
 * naming every problem; AppConfig then refuses to deploy the version and
 * shows the message.
 */
export function validatePolicyVersion(event: AppConfigValidationEvent): void {
  const version = event.configurationVersion ?? '(unknown)';
  const text = Buffer.from(event.content ?? '', 'base64').toString('utf8');
  AccessPolicy.parse(text, { source: `access policy version ${version.slice(0, 40)}` });
}
