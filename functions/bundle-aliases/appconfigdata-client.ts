/**
 * Bundled in place of `@aws-sdk/client-appconfigdata` in the functions' Lambda
 * bundles (infra/lambda-bundling.ts), under Powertools Parameters' AppConfig
 * provider, which keeps using it as it uses the SDK's client: the provider
 * still holds the configuration session, the poll token and the last
 * document. The SDK's client brings AppConfig Data's REST protocol and the
 * SDK's event-stream code into the bundle, 27 KB of the vend function's
 * 350 KB budget (measured with esbuild as the construct bundles), for two
 * calls. This client makes those two calls, signed with SigV4 (the same
 * `@smithy/signature-v4` and SHA-256 the SDK signs with) and the credentials Lambda
 * provides (the SDK's provider, cut to Lambda's chain in these bundles).
 *
 * It implements what the provider uses and no more: `send` of the two
 * commands below, their outputs, and errors named as the service names them.
 * Tests run the SDK's own client and, bundled as the construct bundles, this one.
 */
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { Sha256 } from '@smithy/core/checksum';
import { SignatureV4 } from '@smithy/signature-v4';

export interface StartConfigurationSessionCommandInput {
  readonly ApplicationIdentifier: string | undefined;
  readonly EnvironmentIdentifier: string | undefined;
  readonly ConfigurationProfileIdentifier: string | undefined;
  readonly RequiredMinimumPollIntervalInSeconds?: number;
}

export interface GetLatestConfigurationCommandInput {
  readonly ConfigurationToken: string | undefined;
}

export class StartConfigurationSessionCommand {
  constructor(readonly input: StartConfigurationSessionCommandInput) {}
}

export class GetLatestConfigurationCommand {
  constructor(readonly input: GetLatestConfigurationCommandInput) {}
}

export interface AppConfigDataClientConfig {
  readonly region?: string;
  /** Default `AWS_ENDPOINT_URL_APPCONFIGDATA`, then the regional endpoint. */
  readonly endpoint?: string;
  /** The SDK's option; its `requestTimeout` (ms) bounds each attempt. */
  readonly requestHandler?: { readonly requestTimeout?: number };
  /**
   * The SDK's option: attempts per call, the later ones only after a
   * throttle, a 5xx or no answer at all (default 1).
   */
  readonly maxAttempts?: number;
}

/** An error the service answered, named as the SDK names it (`ThrottlingException`...). */
export class AppConfigDataServiceException extends Error {
  readonly $metadata: { readonly httpStatusCode: number };
  constructor(name: string, message: string, status: number) {
    super(message);
    this.name = name;
    this.$metadata = { httpStatusCode: status };
  }
}

const TEXT = new TextEncoder();

/** RFC 3986 encoding, as SigV4 canonicalises a query (encodeURIComponent leaves !'()* alone). */
const rfc3986 = (value: string): string =>
  encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );

/** What the SDK's standard retry strategy retries: throttles, 5xx, no answer. */
const retryable = (error: unknown): boolean =>
  !(error instanceof AppConfigDataServiceException) ||
  error.$metadata.httpStatusCode >= 500 ||
  error.name === 'ThrottlingException';

export class AppConfigDataClient {
  readonly config: AppConfigDataClientConfig;
  /**
   * Enough of the SDK's middleware stack for Powertools to take this as an
   * SDK client (and add its user-agent middleware, which this client does
   * not run).
   */
  readonly middlewareStack = {
    add: (): void => undefined,
    addRelativeTo: (): void => undefined,
    identify: (): string[] => [],
  };
  readonly #signer: SignatureV4;
  readonly #endpoint: URL;
  readonly #timeoutMs: number;
  readonly #attempts: number;

  constructor(config: AppConfigDataClientConfig = {}) {
    this.config = config;
    const region = config.region ?? process.env.AWS_REGION ?? 'us-east-1';
    const suffix = region.startsWith('cn-') ? 'amazonaws.com.cn' : 'amazonaws.com';
    this.#endpoint = new URL(
      config.endpoint ??
        process.env.AWS_ENDPOINT_URL_APPCONFIGDATA ??
        `https://appconfigdata.${region}.${suffix}`,
    );
    // AppConfig Data signs as `appconfig` (the SDK's client metadata).
    this.#signer = new SignatureV4({
      service: 'appconfig',
      region,
      credentials: defaultProvider(),
      sha256: Sha256,
    });
    this.#timeoutMs = config.requestHandler?.requestTimeout ?? 5000;
    this.#attempts = Math.max(1, config.maxAttempts ?? 1);
  }

  send(command: StartConfigurationSessionCommand): Promise<{ InitialConfigurationToken?: string }>;
  send(command: GetLatestConfigurationCommand): Promise<{
    NextPollConfigurationToken?: string;
    NextPollIntervalInSeconds?: number;
    ContentType?: string;
    Configuration?: Uint8Array;
    VersionLabel?: string;
  }>;
  async send(
    command: StartConfigurationSessionCommand | GetLatestConfigurationCommand,
  ): Promise<Record<string, unknown>> {
    // Told apart by input, not class: the caller may hold the SDK's command
    // classes (tests run Powertools unbundled, against the SDK's package).
    if (!('ConfigurationToken' in command.input)) {
      // The body is the input as given: the identifiers and the session's
      // RequiredMinimumPollIntervalInSeconds (API Reference, StartConfigurationSession).
      const response = await this.#call('POST', '/configurationsessions', {}, command.input);
      const body = (await response.json()) as { InitialConfigurationToken?: string };
      return { InitialConfigurationToken: body.InitialConfigurationToken };
    }
    const response = await this.#call('GET', '/configuration', {
      configuration_token:
        (command.input as GetLatestConfigurationCommandInput).ConfigurationToken ?? '',
    });
    const interval = response.headers.get('next-poll-interval-in-seconds');
    const label = response.headers.get('version-label');
    return {
      NextPollConfigurationToken:
        response.headers.get('next-poll-configuration-token') ?? undefined,
      ...(interval === null ? {} : { NextPollIntervalInSeconds: Number(interval) }),
      ContentType: response.headers.get('content-type') ?? undefined,
      Configuration: new Uint8Array(await response.arrayBuffer()),
      ...(label === null ? {} : { VersionLabel: label }),
    };
  }

  async #call(
    method: 'GET' | 'POST',
    path: string,
    query: Record<string, string>,
    body?: unknown,
  ): Promise<Response> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.#attempt(method, path, query, body);
      } catch (error) {
        if (attempt >= this.#attempts || !retryable(error)) throw error;
      }
    }
  }

  async #attempt(
    method: 'GET' | 'POST',
    path: string,
    query: Record<string, string>,
    body?: unknown,
  ): Promise<Response> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const signed = await this.#signer.sign({
      method,
      protocol: this.#endpoint.protocol,
      hostname: this.#endpoint.hostname,
      ...(this.#endpoint.port ? { port: Number(this.#endpoint.port) } : {}),
      path,
      query,
      headers: {
        host: this.#endpoint.host,
        ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(payload === undefined ? {} : { body: payload }),
    });
    const url = new URL(path, this.#endpoint);
    url.search = Object.entries(query)
      .map(([name, value]) => `${rfc3986(name)}=${rfc3986(value)}`)
      .join('&');
    const response = await fetch(url, {
      method,
      headers: signed.headers as Record<string, string>,
      ...(payload === undefined ? {} : { body: TEXT.encode(payload) }),
      signal: AbortSignal.timeout(this.#timeoutMs),
    });
    if (!response.ok) {
      const type = response.headers.get('x-amzn-errortype')?.split(':')[0];
      const text = await response.text();
      let message = `AppConfig Data answered ${response.status}`;
      try {
        message = (JSON.parse(text) as { Message?: string; message?: string }).Message ?? message;
      } catch {
        // Not JSON: keep the status line.
      }
      throw new AppConfigDataServiceException(
        type ?? (response.status >= 500 ? 'InternalServerException' : 'BadRequestException'),
        message,
        response.status,
      );
    }
    return response;
  }
}
