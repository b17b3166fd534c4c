import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlatformClient } from '../src/platform/client.ts';
import type { PlatformClient } from '../src/platform/types.ts';
import { openPoolCount } from '../src/platform/shared-pools.ts';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { capturingLogger } from './helpers/log-capture.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';

/**
 * The organisations' clients of one process share one keep-alive pool per origin: a
 * worker serving many organisations on one platform reuses its sockets across them
 * instead of opening a connection for nearly every job. Each request still carries its
 * own organisation's key, and the pool goes when the last client using it closes.
 */

const { log } = capturingLogger('warn');
let sim: RunningSimulator;
const keyPrefix = testPrefix();

beforeAll(async () => {
  sim = await startSimulator({
    seed: 11,
    sizes: { courses: 2, users: 3, results: 5, groups: 1 },
    organisations: [
      { apiKey: 'shared-pool-a', name: 'alpha' },
      { apiKey: 'shared-pool-b', name: 'beta' },
      { apiKey: 'shared-pool-c', name: 'gamma' },
    ],
  });
});
afterAll(async () => {
  await sim.close();
  await dropPrefix(keyPrefix);
});

const clientFor = (apiKey: string, extra: { timeoutMs?: number } = {}): PlatformClient =>
  createPlatformClient({ apiUrl: sim.url, apiKey, log, redisUrl: REDIS_URL, keyPrefix, requestsPerSecond: 1_000, retries: 0, ...extra });

/** Every page of the organisation's courses (one request at these sizes). */
async function readCourses(client: PlatformClient): Promise<number> {
  let count = 0;
  for await (const page of client.listCourses()) count += page.records.length;
  return count;
}

describe('one pool per origin in a process', () => {
  it('reuses one socket across organisations that call one after another, each with its own key', async () => {
    const pools = openPoolCount();
    const clients = ['shared-pool-a', 'shared-pool-b', 'shared-pool-c'].map((key) => clientFor(key));
    try {
      const before = sim.connections();
      const seen = sim.requests.length;
      for (let round = 0; round < 3; round += 1) {
        for (const client of clients) await readCourses(client);
      }
      // Nine requests in turn over fewer sockets than organisations (a pool each opened three
      // or more). Two at most: undici may open a second while the first is still marked busy
      // in the turn its answer ends.
      expect(sim.connections() - before).toBeLessThanOrEqual(2);
      const opened = sim.connections() - before;
      expect(openPoolCount()).toBe(pools + 1);
      const authorisations = sim.requests.slice(seen).map((r) => r.authorization);
      expect(authorisations).toEqual(Array.from({ length: 3 }, () => ['Bearer shared-pool-a', 'Bearer shared-pool-b', 'Bearer shared-pool-c']).flat());
      // One organisation's client closing leaves the others' pool open.
      await clients[0]!.close();
      await readCourses(clients[1]!);
      expect(sim.connections() - before).toBe(opened);
    } finally {
      await Promise.all(clients.map((client) => client.close()));
    }
    expect(openPoolCount()).toBe(pools);
  });

  it('keeps a separate pool for a client with other timeouts, and closing twice is harmless', async () => {
    const pools = openPoolCount();
    const plain = clientFor('shared-pool-a');
    const quick = clientFor('shared-pool-b', { timeoutMs: 5_000 });
    try {
      const before = sim.connections();
      await readCourses(plain);
      await readCourses(quick);
      expect(openPoolCount()).toBe(pools + 2);
      expect(sim.connections() - before).toBe(2);
    } finally {
      await plain.close();
      await plain.close();
      await quick.close();
    }
    expect(openPoolCount()).toBe(pools);
  });
});
