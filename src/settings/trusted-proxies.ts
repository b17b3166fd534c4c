import { isIP } from 'node:net';

/**
 * TRAINSYNC_CONSOLE_TRUST_PROXY: the proxies whose `X-Forwarded-For` and `X-Forwarded-Proto`
 * the console believes, as addresses or CIDR ranges (what Fastify's `trustProxy` takes as a
 * list). A peer not in the list is taken at its own address whatever headers it sends, so a
 * client cannot pick the address the log-in throttle counts by. `true` (trust any peer) is
 * refused: it would let every client choose its address.
 */

const HINT = 'false, or the proxies\' addresses or CIDR ranges separated by commas, e.g. 127.0.0.1 or 10.0.0.0/8,::1';

/** One address or `address/prefix` (IPv4 up to /32, IPv6 up to /128), or the problem. */
function entryProblem(entry: string): string | undefined {
  const [address = '', prefix, extra] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return `"${entry}" is not an address or a CIDR range`;
  if (prefix === undefined) return undefined;
  const bits = /^\d{1,3}$/.test(prefix) ? Number(prefix) : Number.NaN;
  return bits <= (family === 4 ? 32 : 128) ? undefined : `"${entry}" has a prefix outside 0–${family === 4 ? 32 : 128}`;
}

/** "false" or "" → false (no proxy); "10.0.0.1, 10.1.0.0/16" → the list; anything else → the problem in words. */
export function parseTrustedProxies(value: string): false | string[] | string {
  const text = value.trim();
  if (text === '' || text.toLowerCase() === 'false') return false;
  if (text.toLowerCase() === 'true') return `${HINT} (true would let any client choose the address it is seen at)`;
  const entries = text.split(',').map((entry) => entry.trim());
  for (const entry of entries) {
    const problem = entry === '' ? 'an empty entry' : entryProblem(entry);
    if (problem) return `${HINT} (${problem})`;
  }
  return entries;
}
