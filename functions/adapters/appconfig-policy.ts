import { AppConfigProvider } from '@aws-lambda-powertools/parameters/appconfig';
import type { AppConfigDataClient } from '@aws-sdk/client-appconfigdata';
import type { FetchedDocument } from '../core/policy-source.js';

export interface AppConfigLocation {
  /** AppConfig application, environment and configuration profile (ids or names). */
  readonly application: string;
  readonly environment: string;
  readonly profile: string;
}

export interface AppConfigPolling {
  /**
   * How often the caller polls (POLICY_MAX_AGE_SECONDS), at least 15: the
   * session asks AppConfig to allow polls this often.
   */
  readonly intervalSeconds: number;
  /** Epoch ms, the caller's clock. */
  readonly now: () => number;
}

/** What the fetcher sees of GetLatestConfiguration's answers, which Powertools keeps to itself. */
interface PollAnswer {
  /** Epoch ms before which AppConfig refuses the session's next poll. */
  nextPollAt: number;
  /** The version label of the document last received (AppConfig sends it with the document only). */
  label?: string | undefined;
}

/**
 * Reads the access policy document from AWS AppConfig through Powertools
 * Parameters' AppConfig provider, which keeps the configuration session and,
 * when AppConfig answers "unchanged" (an empty body), the last document. Each
 * call asks AppConfig (`forceFetch`): PolicySource decides how often.
 *
 * The version. A document comes with the hosted configuration version's label
 * (`--version-label` of create-hosted-configuration-version), which the
 * fetcher returns as the document's version: "If the client already has the
 * latest version of the configuration data, this value is empty" (API
 * Reference, GetLatestConfiguration, VersionLabel), so it is kept from the
 * answer that brought the document. Powertools returns only the document, so
 * the fetcher reads the label from the client's answers. A version without a
 * label goes by its digest (PolicySource), which `tvm policy validate` prints
 * for a file; AppConfig Data sends no version number.
 *
 * The poll interval. A session's client "can't call GetLatestConfiguration
 * more frequently than" its `RequiredMinimumPollIntervalInSeconds` ("Valid
 * Range: Minimum value of 15. Maximum value of 86400.", AWS AppConfig API
 * Reference, StartConfigurationSession:
 * https://docs.aws.amazon.com/appconfig/2019-10-09/APIReference/API_appconfigdata_StartConfigurationSession.html).
 * A poll that comes sooner is refused with BadRequestException, problem
 * `PollIntervalNotSatisfied`, "The client called the service before the time
 * specified in the poll interval" (API Reference, InvalidParameterDetail).
 * Without the field AppConfig sets 60 s (`NextPollIntervalInSeconds: 60` in the
 * AWS AppConfig User Guide's "Retrieving the configuration" example), so a
 * POLICY_MAX_AGE_SECONDS under 60 would fail every other fetch: the session
 * asks for the caller's interval (Powertools passes `sdkOptions` to
 * StartConfigurationSession). `NextPollIntervalInSeconds` "may vary over the
 * course of the session, so it should be used instead of the value sent on
 * the StartConfigurationSession call" (User Guide, "Retrieving the
 * configuration"): should AppConfig ask for a longer wait, a call before it
 * ends returns the last document without polling.
 */
export function appConfigDocumentFetcher(
  client: AppConfigDataClient,
  location: AppConfigLocation,
  polling: AppConfigPolling,
): () => Promise<FetchedDocument> {
  const answer: PollAnswer = { nextPollAt: 0 };
  const provider = new AppConfigProvider({
    application: location.application,
    environment: location.environment,
    awsSdkV3Client: observing(client, answer, polling.now),
  });
  const decoder = new TextDecoder();
  let last: FetchedDocument | undefined;
  return async () => {
    if (last !== undefined && polling.now() < answer.nextPollAt) return last;
    const body = (await provider.get(location.profile, {
      forceFetch: true,
      sdkOptions: { RequiredMinimumPollIntervalInSeconds: polling.intervalSeconds },
    })) as Uint8Array | undefined;
    if (body === undefined || body.length === 0) {
      throw new Error('AppConfig returned no access policy document');
    }
    last = {
      text: decoder.decode(body),
      ...(answer.label ? { version: answer.label } : {}),
    };
    return last;
  };
}

/**
 * The client as Powertools takes it (an SDK client: `send`, `config` and the
 * middleware stack), recording from each GetLatestConfiguration answer when
 * AppConfig allows the next poll, and the label of each document it brings.
 */
function observing(
  client: AppConfigDataClient,
  answer: PollAnswer,
  now: () => number,
): AppConfigDataClient {
  const send = async (command: { input: object }) => {
    const output = (await client.send(command as never)) as {
      NextPollIntervalInSeconds?: number;
      Configuration?: Uint8Array | null;
      VersionLabel?: string;
    };
    if (!('ConfigurationToken' in command.input)) return output;
    if (output.NextPollIntervalInSeconds !== undefined) {
      answer.nextPollAt = now() + output.NextPollIntervalInSeconds * 1000;
    }
    // The SDK's client may give `null` for an empty body.
    if ((output.Configuration?.length ?? 0) > 0) {
      answer.label = output.VersionLabel;
    }
    return output;
  };
  return {
    config: client.config,
    middlewareStack: client.middlewareStack,
    send,
  } as unknown as AppConfigDataClient;
}
