/** One decimal octet as the WHATWG URL parser writes it: 0..255, no leading zero. */
const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const IPV4_LOOPBACK = new RegExp(`^127(?:\\.${OCTET}){3}$`);

/**
 * True when `hostname` names this machine: `localhost`, an address of
 * 127.0.0.0/8, or `[::1]`. Give it a WHATWG URL's `hostname`, which is already
 * canonical (`0x7f.0.0.1` and `127.1` become `127.0.0.1`, `[0::1]` becomes
 * `[::1]`). Anything else is not loopback, on purpose: `*.localhost` and
 * `localhost.` go to the resolver, and `[::ffff:127.0.0.1]` (written
 * `[::ffff:7f00:1]`) depends on the socket's dual-stack setting.
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase();
  return host === 'localhost' || host === '[::1]' || IPV4_LOOPBACK.test(host);
}
