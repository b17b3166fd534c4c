import net from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlatformClient, type PlatformClientOptions } from '../src/platform/client.ts';
import { isUnreachableMessage, PLATFORM_UNREACHABLE, PlatformError } from '../src/platform/errors.ts';
import type { PlatformClient, RequestEvent } from '../src/platform/types.ts';
import { createLogger } from '../src/runtime/log.ts';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';

/**
 * A platform URL where nothing has ever answered (connection refused, a host name that
 * does not resolve) is the setting's fault: one try, a permanent error naming the setting
 * and the fix. Once the platform has answered, the same failure is an outage: retried.
 */

const log = createLogger('silent');
const prefix = testPrefix();
const KEY = 'unreachable-test-key-0123456789';

function client(apiUrl: string, events: RequestEvent[], extra: Partial<PlatformClientOptions> = {}): PlatformClient {
  return createPlatformClient({
    apiUrl,
    apiKey: KEY,
    log,
    redisUrl: REDIS_URL,
    keyPrefix: prefix,
    requestsPerSecond: 2000,
    retryBaseDelayMs: 5,
    retryMaxDelayMs: 50,
    retries: 3,
    timeoutMs: 5000,
    onRequest: (event) => events.push(event),
    // What a command's client names (platformClientOptionsFromConfig); the worker's names none.
    urlSetting: 'TRAINSYNC_API_URL',
    ...extra,
  });
}

async function failure(work: () => Promise<unknown>): Promise<PlatformError> {
  try {
    await work();
  } catch (error) {
    if (error instanceof PlatformError) return error;
    throw error;
  }
  throw new Error('expected a PlatformError');
}

const firstPage = async (platform: PlatformClient): Promise<void> => {
  for await (const _page of platform.listCourses()) break;
};

/** Loopback ports nothing listens on: each listened on, then closed. */
async function closedPorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    ports.push((server.address() as net.AddressInfo).port);
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  return ports;
}

describe('a platform that never answered', () => {
  afterAll(async () => {
    await dropPrefix(prefix);
  });

  it('any host under .invalid, any scheme, path and setting name: one try, PLATFORM_UNREACHABLE naming the setting, never the key', async () => {
    const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,14}[a-z0-9])?$/);
    const setting = fc.oneof(fc.constant('TRAINSYNC_API_URL'), fc.tuple(fc.stringMatching(/^[a-z0-9-]{1,20}$/), fc.stringMatching(/^\/[a-z0-9/._-]{1,30}$/)).map(([slug, file]) => `the apiUrl of organisation ${slug} in ${file}`));
    await fc.assert(
      fc.asyncProperty(fc.array(label, { minLength: 1, maxLength: 3 }), fc.constantFrom('http', 'https'), fc.stringMatching(/^(\/[a-zA-Z0-9._~-]{0,12}){0,3}$/), setting, async (labels, scheme, path, urlSetting) => {
        const events: RequestEvent[] = [];
        const url = `${scheme}://${labels.join('.')}.invalid${path}`;
        const platform = client(url, events, { urlSetting });
        try {
          const error = await failure(() => firstPage(platform));
          expect(error.code).toBe(PLATFORM_UNREACHABLE);
          expect(error.retryable).toBe(false);
          expect(error.message.startsWith(`${urlSetting} was not reached (${new URL(url).origin}: host name not found)`)).toBe(true);
          expect(isUnreachableMessage(error.message)).toBe(true);
          expect(error.message).not.toContain(KEY);
          expect(events).toHaveLength(1);
        } finally {
          await platform.close();
        }
      }),
      { numRuns: 12 },
    );
  });

  it('any closed loopback port: one try, PLATFORM_UNREACHABLE, the fix named', async () => {
    const ports = await closedPorts(8);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ports), fc.constantFrom('127.0.0.1', 'localhost'), async (port, host) => {
        const events: RequestEvent[] = [];
        const platform = client(`http://${host}:${port}`, events);
        try {
          const error = await failure(() => firstPage(platform));
          expect(error.code).toBe(PLATFORM_UNREACHABLE);
          expect(error.message).toMatch(/^TRAINSYNC_API_URL was not reached \(http:\/\/[^:]+:\d+: connection refused: nothing listens at that host and port\); check the scheme, host and port in TRAINSYNC_API_URL/);
          expect(events).toHaveLength(1);
        } finally {
          await platform.close();
        }
      }),
      { numRuns: 10 },
    );
  });
});

describe("the worker's client (no URL setting to name)", () => {
  it('retries a platform that refuses from the start as an outage: a queued change is never failed for good by it', async () => {
    const events: RequestEvent[] = [];
    const platform = client('http://127.0.0.1:9', events, { urlSetting: undefined });
    try {
      const error = await failure(() => firstPage(platform));
      expect(error.code).toBe('NETWORK');
      expect(error.retryable).toBe(true);
      expect(isUnreachableMessage(error.message)).toBe(false);
      // The first try and 3 retries.
      expect(events.length).toBe(4);
    } finally {
      await platform.close();
    }
  });
});

describe('a platform that answered once, then refuses', () => {
  let sim: RunningSimulator;
  beforeAll(async () => {
    sim = await startSimulator({ seed: 13 });
  });
  afterAll(async () => {
    await sim?.close();
  });

  it('is an outage: retried, and the error stays retryable (no PLATFORM_UNREACHABLE)', async () => {
    const events: RequestEvent[] = [];
    const platform = createPlatformClient({ apiUrl: sim.url, apiKey: sim.apiKey, log, redisUrl: REDIS_URL, keyPrefix: prefix, requestsPerSecond: 2000, retryBaseDelayMs: 5, retryMaxDelayMs: 50, retries: 3, timeoutMs: 5000, onRequest: (event) => events.push(event) });
    try {
      await firstPage(platform);
      await sim.close();
      // Keep-alive sockets would otherwise see a reset, not a refusal: start from none.
      const answered = events.length;
      const error = await failure(() => firstPage(platform));
      expect(error.code).toBe('NETWORK');
      expect(error.retryable).toBe(true);
      expect(isUnreachableMessage(error.message)).toBe(false);
      // The first try and 3 retries.
      expect(events.length - answered).toBe(4);
    } finally {
      await platform.close();
    }
  });
});
