import { type AppConfigValidationEvent, validatePolicyVersion } from './validate.js';

/**
 * AWS AppConfig's validator of the access-policy configuration profile:
 * returns nothing for a valid version, throws (a function error AppConfig
 * reads as "invalid") naming every problem otherwise.
 */
export const handler = async (event: AppConfigValidationEvent): Promise<void> => {
  validatePolicyVersion(event);
};
