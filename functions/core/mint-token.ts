import { type Clock, epochSeconds } from './clock.js';
import {
  CredentialsUnavailableError,
  UpstreamCredentialsRejectedError,
  UpstreamUnavailableError,
} from './errors.js';
import type { CredentialsSource, ProviderCredentials, Token } from './ports.js';
import type { CoreLogger, CoreMetric, Minter } from './token-service-types.js';

export interface MintDeps {
  readonly mint: Minter;
  readonly credentials: CredentialsSource;
  readonly clock: Clock;
  readonly logger: CoreLogger;
  readonly count?: (metric: CoreMetric) => void;
}

/**
 * Calls the provider and turns its grant into a Token: `issuedAt` is our
 * clock when the request was sent, `expiresAt` that plus the provider's
 * `expires_in`. After a 401/403 the secret is re-read once and the request
 * retried only if the secret changed (a rotation this instance had not seen).
 */
export async function mintToken(
  deps: MintDeps,
  scope: string | undefined,
  credentials: ProviderCredentials,
  deadlineMs: number,
): Promise<Token> {
  const attempt = async (creds: ProviderCredentials): Promise<Token> => {
    const issuedAt = epochSeconds(deps.clock);
    deps.count?.('UpstreamRequests');
    try {
      const grant = await deps.mint(creds, scope, deadlineMs);
      return {
        accessToken: grant.accessToken,
        tokenType: 'Bearer',
        ...(scope === undefined ? {} : { scope }),
        issuedAt,
        expiresAt: issuedAt + grant.expiresIn,
        ...(grant.createdAt === undefined ? {} : { providerCreatedAt: grant.createdAt }),
        credentialsVersion: creds.version,
      };
    } catch (error) {
      deps.count?.('UpstreamErrors');
      throw error;
    }
  };
  try {
    return await attempt(credentials);
  } catch (error) {
    if (!(error instanceof UpstreamCredentialsRejectedError)) throw error;
    const reread = await deps.credentials
      .get({ forceRefresh: true })
      .catch((readError: unknown) => {
        // Unreadable now: nothing new to try; the rejection stands.
        if (readError instanceof CredentialsUnavailableError) return credentials;
        throw readError;
      });
    if (
      reread.version === credentials.version &&
      reread.key === credentials.key &&
      reread.secret === credentials.secret
    ) {
      throw error;
    }
    // The re-read found a new secret but took the time left under the lease:
    // not a rejection of the new secret (it was never tried), and a recorded
    // rejection would answer 502 fleet-wide for the back-off. Try again soon.
    if (deps.clock.now() >= deadlineMs) {
      throw new UpstreamUnavailableError(
        'The provider rejected the previous secret; the new one could not be tried in time.',
        1,
        { cause: error },
      );
    }
    deps.logger.info('provider rejected the credentials; retrying with the re-read secret', {
      scope: scope ?? 'unscoped',
      credentialsVersion: reread.version,
    });
    return attempt(reread);
  }
}
