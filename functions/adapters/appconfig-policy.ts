import { AppConfigProvider } from '@aws-lambda-powertools/parameters/appconfig';
import type { AppConfigDataClient } from '@aws-sdk/client-appconfigdata';
import type { FetchedDocument } from '../core/policy-source.js';

export interface AppConfigLocation {
  /** AppConfig application, environment and configuration profile (ids or names). */
  readonly application: string;
  readonly environment: string;
  readonly profile: string;
}

/**
 * Reads the access policy document from AWS AppConfig through Powertools
 * Parameters' AppConfig provider, which keeps the configuration session and,
 * when AppConfig answers "unchanged" (an empty body), the last document. Each
 * call asks AppConfig (`forceFetch`): PolicySource decides how often. The
 * document's version is its digest (PolicySource), which `tvm policy validate`
 * prints for a file too.
 */
export function appConfigDocumentFetcher(
  client: AppConfigDataClient,
  location: AppConfigLocation,
): () => Promise<FetchedDocument> {
  const provider = new AppConfigProvider({
    application: location.application,
    environment: location.environment,
    awsSdkV3Client: client,
  });
  const decoder = new TextDecoder();
  return async () => {
    const body = (await provider.get(location.profile, { forceFetch: true })) as
      | Uint8Array
      | undefined;
    if (body === undefined || body.length === 0) {
      throw new Error('AppConfig returned no access policy document');
    }
    return { text: decoder.decode(body) };
  };
}
