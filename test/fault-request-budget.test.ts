import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlatformClient } from '../src/platform/client.ts';
import { PlatformError } from '../src/platform/errors.ts';
import type { PlatformClient } from '../src/platform/types.ts';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { capturingLogger } from './helpers/log-capture.ts';
import { startOwnRedis, type OwnRedis } from './helpers/own-services.ts';
import { testPrefix } from './helpers/redis.ts';
import { waitFor } from './helpers/worker-process.ts';

/**
 * The request budget lives in Redis. With Redis stopped (a redis-server of this file's
 * own), a platform call sends nothing without a grant: it fails, after its retries, with
 * a retryable BUDGET_UNAVAILABLE error that says the budget (Redis) is unavailable, and
 * the outage is logged once, not once per reconnect. When Redis is back (empty), calls
 * go through again.
 */
describe('the request budget while Redis is down', () => {
  let redis: OwnRedis;
  let sim: RunningSimulator;
  let client: PlatformClient;
  let logLines: string[] = [];

  beforeAll(async () => {
    [redis, sim] = await Promise.all([startOwnRedis(), startSimulator({ seed: 5, sizes: { results: 0, users: 10 } })]);
    const captured = capturingLogger('debug');
    const log = captured.log;
    logLines = captured.lines;
    client = createPlatformClient({ apiUrl: sim.url, apiKey: sim.apiKey, log, redisUrl: redis.url, keyPrefix: testPrefix(), requestsPerSecond: 100, retries: 2, retryBaseDelayMs: 5, retryMaxDelayMs: 50 });
  });

  afterAll(async () => {
    await client?.close();
    await sim?.close();
    await redis?.destroy();
  });

  it('sends nothing and fails with a retryable BUDGET_UNAVAILABLE error naming the budget; works again when Redis is back', async () => {
    expect(await client.getSeats()).toMatchObject({ seatsInUse: expect.any(Number) });
    expect(sim.requests).toHaveLength(1);

    await redis.stop();
    sim.resetRequests();
    const error = await client.getSeats().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(PlatformError);
    expect(error).toMatchObject({ code: 'BUDGET_UNAVAILABLE', retryable: true });
    expect((error as PlatformError).message).toBe('GET /api/v2/users/seats: the request budget (Redis) is unavailable');
    // Not one request went out without a grant.
    expect(sim.requests).toEqual([]);
    // Each attempt (1 + 2 retries) failed for want of a grant, and gave up after the last.
    const records = logLines.map((line) => JSON.parse(line) as { msg: string; code?: string; attempt?: number });
    const attempts = records.filter((r) => r.code === 'BUDGET_UNAVAILABLE').map((r) => [r.msg, r.attempt]);
    expect(attempts).toEqual([
      ['platform request failed; retrying', 1],
      ['platform request failed; retrying', 2],
      ['platform request failed: GET /api/v2/users/seats: the request budget (Redis) is unavailable', 3],
    ]);
    // The outage itself: one line, however many reconnects failed meanwhile.
    expect(records.filter((r) => r.msg === 'request budget: Redis unreachable')).toHaveLength(1);

    // Redis comes back empty: the budget rebuilds its keys and calls go through.
    await redis.start();
    await waitFor(() => client.getSeats().then(() => true, () => undefined), 30_000, 'a call to go through once Redis is back');
    expect(sim.requests.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(1);
  });
});
