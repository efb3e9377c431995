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
 * call asks AppConfig (`forceFetch`): PolicySource decides how often.
 *
 * The document's version label, when its hosted version has one, is read off
 * GetLatestConfiguration's answer by a middleware on the injected client (the
 * provider returns the content only).
 */
export function appConfigDocumentFetcher(
  client: AppConfigDataClient,
  location: AppConfigLocation,
): () => Promise<FetchedDocument> {
  let versionLabel: string | undefined;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      if (context.commandName === 'GetLatestConfigurationCommand') {
        const output = result.output as { Configuration?: Uint8Array; VersionLabel?: string };
        // An empty body means "unchanged": the label of the document in hand stays.
        if ((output.Configuration?.length ?? 0) > 0) versionLabel = output.VersionLabel;
      }
      return result;
    },
    { step: 'initialize', name: 'tokenVendingPolicyVersionLabel' },
  );
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
    return {
      text: decoder.decode(body),
      ...(versionLabel === undefined ? {} : { version: versionLabel }),
    };
  };
}
