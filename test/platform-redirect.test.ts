import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/runtime/log.ts';
import { createPlatformClient } from '../src/platform/client.ts';
import { PlatformError } from '../src/platform/errors.ts';
import type { PlatformClient } from '../src/platform/types.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';

/**
 * A 3xx from the platform never carries the API key to another host (src/platform/http.ts).
 * Three tiny node:http servers of our own: the "platform" on 127.0.0.1 answers every
 * request with a redirect; the targets, on 127.0.0.2 (another host on loopback) and on
 * another port of 127.0.0.1 (another origin), record every Authorization header they see.
 */

interface Seen {
  url: string;
  authorization: string | undefined;
}

function listen(server: http.Server, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve((server.address() as AddressInfo).port));
  });
}

function recorder(seen: Seen[]): http.Server {
  return http.createServer((req, res) => {
    seen.push({ url: req.url ?? '', authorization: req.headers.authorization });
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ seatsInUse: 1, totalSeats: 2 }));
  });
}

describe('a redirect from the platform', () => {
  const KEY = `redirect-${randomUUID()}`;
  const atOtherHost: Seen[] = [];
  const atOtherPort: Seen[] = [];
  const atPlatform: Seen[] = [];
  let otherHost: http.Server;
  let otherPort: http.Server;
  let platform: http.Server;
  let otherHostUrl = '';
  let otherPortUrl = '';
  let platformUrl = '';
  /** Where the platform redirects to next, and with which status. */
  let redirect = { status: 302, location: '' };
  let prefix: string;
  const clients: PlatformClient[] = [];

  beforeAll(async () => {
    prefix = testPrefix();
    otherHost = recorder(atOtherHost);
    otherPort = recorder(atOtherPort);
    otherHostUrl = `http://127.0.0.2:${await listen(otherHost, '127.0.0.2')}`;
    otherPortUrl = `http://127.0.0.1:${await listen(otherPort, '127.0.0.1')}`;
    platform = http.createServer((req, res) => {
      atPlatform.push({ url: req.url ?? '', authorization: req.headers.authorization });
      req.resume();
      res.writeHead(redirect.status, { location: redirect.location }).end();
    });
    platformUrl = `http://127.0.0.1:${await listen(platform, '127.0.0.1')}`;
  });

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    for (const server of [platform, otherHost, otherPort]) {
      server?.closeAllConnections();
      await new Promise((resolve) => server?.close(resolve));
    }
    if (prefix) await dropPrefix(prefix);
  });

  const client = (): PlatformClient => {
    const made = createPlatformClient({ apiUrl: platformUrl, apiKey: KEY, log: createLogger('silent'), redisUrl: REDIS_URL, keyPrefix: prefix, requestsPerSecond: 2000, retryBaseDelayMs: 5, timeoutMs: 5_000 });
    clients.push(made);
    return made;
  };

  it('the targets record the key when it is sent to them (the check below can fail)', async () => {
    const direct = createPlatformClient({ apiUrl: otherHostUrl, apiKey: KEY, log: createLogger('silent'), redisUrl: REDIS_URL, keyPrefix: prefix, requestsPerSecond: 2000 });
    clients.push(direct);
    await direct.getSeats();
    expect(atOtherHost.map((s) => s.authorization)).toEqual([`Bearer ${KEY}`]);
    atOtherHost.length = 0;
  });

  for (const status of [301, 302, 303, 307, 308]) {
    it(`is not followed on ${status}: the key never reaches another host or origin, and the call fails naming the status`, async () => {
      const platformBefore = atPlatform.length;
      for (const target of [otherHostUrl, otherPortUrl]) {
        redirect = { status, location: `${target}/api/v2/users/seats` };
        const error = await client().getSeats().then(
          () => undefined,
          (caught: unknown) => caught,
        );
        expect(error).toBeInstanceOf(PlatformError);
        expect(error).toMatchObject({ status, code: `HTTP_${status}`, retryable: false });
        expect((error as PlatformError).message).toContain(`HTTP ${status}`);
      }
      // The platform was asked (with the key, that is where it belongs), once per call: a redirect is not retried.
      const asked = atPlatform.slice(platformBefore);
      expect(asked).toHaveLength(2);
      expect(asked.every((s) => s.authorization === `Bearer ${KEY}` && s.url === '/api/v2/users/seats')).toBe(true);
      expect(atOtherHost).toEqual([]);
      expect(atOtherPort).toEqual([]);
    });
  }
});
