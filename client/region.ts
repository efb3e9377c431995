/** `<url-id>.lambda-url.<region>.on.aws`, the host name of every Lambda Function URL. */
const FUNCTION_URL_HOST = /^[a-z0-9]+\.lambda-url\.([a-z]{2}(?:-[a-z]+)+-\d+)\.on\.aws$/;

/** The region in a Function URL's host name, if it is one. */
export function regionFromUrl(url: URL): string | undefined {
  return FUNCTION_URL_HOST.exec(url.hostname.toLowerCase())?.[1];
}

/**
 * `localhost`, an IPv4 address in `127.0.0.0/8` or `[::1]`. The URL parser has
 * already normalised IP addresses (`127.1` is `127.0.0.1`), so a name such as
 * `127.example.com` is not mistaken for one.
 */
export function isLoopback(url: URL): boolean {
  const host = url.hostname.toLowerCase();
  return host === 'localhost' || /^127(?:\.\d{1,3}){3}$/.test(host) || host === '[::1]';
}

/**
 * The SigV4 region for a vend URL: the Function URL's own region, else
 * `AWS_REGION`, else `us-east-1` for a loopback URL (the local stack's
 * default). Undefined when none applies.
 */
export function resolveRegion(
  url: URL,
  env: Readonly<Record<string, string | undefined>>,
): string | undefined {
  return (
    regionFromUrl(url) ??
    (env.AWS_REGION || undefined) ??
    (isLoopback(url) ? 'us-east-1' : undefined)
  );
}
