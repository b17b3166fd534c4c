import Bottleneck from 'bottleneck';
import { Redis } from 'ioredis';
import type { Logger } from '../log.ts';
import { sleep } from './retry.ts';

/**
 * The request budget toward one platform origin, shared by every process that uses the
 * same Redis, key prefix and origin.
 *
 * Why spacing and not a window: a fixed-window limiter lets a whole window's quota go
 * in a burst at each edge, so a sliding second can see twice the budget (measured with
 * BullMQ's limiter, shared/reference/baselines.md). Bottleneck's clustered `minTime`
 * hands out send times one `minTime` apart from a single `nextRequest` kept in Redis
 * (Redis clock, Lua script), so with `minTime = 1000 / rps × (1 + margin)` no sliding
 * second can hold more than `rps` requests, whichever process sends them. The margin
 * absorbs event-loop and network jitter between the grant and the request leaving.
 *
 * A 429 from any process sets a shared pause (a Redis key with a TTL); every process
 * checks it just before a granted request leaves, and again before queueing.
 */

export interface RequestBudgetOptions {
  redisUrl: string;
  keyPrefix: string;
  /** `https://host:port`: each origin has its own budget. */
  origin: string;
  requestsPerSecond: number;
  /** Extra spacing over 1000/rps; default 0.05 (5 %). */
  safetyMargin?: number;
  log: Logger;
}

export interface RequestBudget {
  /** Resolves when this process may send one HTTP request (one per attempt). */
  acquire(signal?: AbortSignal): Promise<void>;
  /** Makes every process wait `ms` from now before its next request (only ever extends). */
  pauseFor(ms: number): Promise<void>;
  /** Milliseconds left of the shared pause (0 when none). */
  pausedForMs(): Promise<number>;
  readonly minTimeMs: number;
  readonly limiterId: string;
  readonly pauseKey: string;
  close(): Promise<void>;
}

/** Sets the pause only if it ends later than the one already set (PTTL is -2 when absent). */
const EXTEND_PAUSE_LUA = `
local current = redis.call('PTTL', KEYS[1])
if current < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[1])
  return 1
end
return 0`;

/** Bottleneck keeps its state under `b_<id>_*`; tests that clean up need this. */
export function budgetKeyPrefix(keyPrefix: string): string {
  return `b_${keyPrefix}:platform-budget:`;
}

export function createRequestBudget(options: RequestBudgetOptions): RequestBudget {
  const margin = options.safetyMargin ?? 0.05;
  const minTimeMs = (1000 / options.requestsPerSecond) * (1 + margin);
  const limiterId = `${options.keyPrefix}:platform-budget:${options.origin}`;
  const pauseKey = `${options.keyPrefix}:platform-pause:${options.origin}`;
  const log = options.log;

  const redis = new Redis(options.redisUrl, { maxRetriesPerRequest: 3, enableOfflineQueue: true });
  redis.on('error', (error: Error) => log.warn({ err: { message: error.message } }, 'request budget: Redis connection error'));
  const connection = new Bottleneck.IORedisConnection({ client: redis });
  connection.on('error', (error: Error) => log.warn({ err: { message: error.message } }, 'request budget: Redis error'));

  const limiter = new Bottleneck({
    id: limiterId,
    datastore: 'ioredis',
    connection,
    minTime: minTimeMs,
    // Concurrency is not what the platform limits; spacing is.
    maxConcurrent: null,
    // Never wipe state other processes rely on.
    clearDatastore: false,
    // The Redis keys expire a minute after the last grant, so nothing is left behind
    // by processes that stop or crash. With maxConcurrent null a dead process holds no
    // capacity: its reserved send times simply pass unused.
    timeout: 60_000,
    heartbeatInterval: 5_000,
    clientTimeout: 10_000,
  });
  limiter.on('error', (error: unknown) =>
    log.warn({ err: { message: error instanceof Error ? error.message : String(error) } }, 'request budget: limiter error'),
  );
  // The settings hash outlives a restart for up to `timeout`: apply this process's
  // spacing so a lowered budget takes effect now, not after the keys expire.
  const settingsApplied = limiter.ready().then(() => limiter.updateSettings({ minTime: minTimeMs }));
  settingsApplied.catch(() => undefined);

  let closed = false;

  async function pausedForMs(): Promise<number> {
    const ttl = await redis.pttl(pauseKey);
    return ttl > 0 ? ttl : 0;
  }

  return {
    minTimeMs,
    limiterId,
    pauseKey,
    async acquire(signal?: AbortSignal): Promise<void> {
      await settingsApplied;
      for (;;) {
        if (signal?.aborted) throw signal.reason;
        const wait = await pausedForMs();
        if (wait > 0) {
          await sleep(wait, signal);
          continue;
        }
        // The job runs at its granted send time; re-checking the pause there means a
        // 429 seen by another process meanwhile stops this request from leaving.
        const clear = await limiter.schedule(async () => (await pausedForMs()) === 0);
        if (signal?.aborted) throw signal.reason;
        if (clear) return;
      }
    },
    async pauseFor(ms: number): Promise<void> {
      const whole = Math.max(1, Math.ceil(ms));
      const changed = await redis.eval(EXTEND_PAUSE_LUA, 1, pauseKey, String(whole), String(Date.now() + whole));
      if (changed === 1) log.warn({ pauseMs: whole, origin: options.origin }, 'platform rate limited: every process pauses');
    },
    pausedForMs,
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await settingsApplied.catch(() => undefined);
      await limiter.disconnect(false).catch(() => undefined);
      await connection.disconnect(true).catch(() => undefined);
      if (redis.status !== 'end') redis.disconnect();
    },
  };
}
