import { Redis } from 'ioredis';
import { RedisSlidingWindowRateLimiter } from 'sliding-window-rate-limiter';
import type { Logger } from '../log.ts';
import { sleep } from './retry.ts';

/**
 * The request budget toward one platform origin, shared by every process that uses the
 * same Redis, key prefix and origin.
 *
 * Why not a fixed window: a fixed-window limiter lets a whole window's quota go in a
 * burst at each edge, so a sliding second can see twice the budget (measured with
 * BullMQ's limiter, shared/reference/baselines.md). sliding-window-rate-limiter keeps a
 * log of grants in a Redis sorted set (Redis clock, one Lua call per reservation) and
 * grants only while fewer than `slots` were granted in the last `windowMs`.
 *
 * The log window is short on purpose: with `slots` ≤ budget / 21 and `windowMs` =
 * slots × 1000 / budget × (1 + margin), any one second holds at most
 * slots × ⌈1000 / windowMs⌉ ≤ budget grants (see `budgetShape`). At the default 10/s
 * that is one grant per 105 ms: evenly spaced, which also absorbs a little jitter
 * between the grant and the request reaching the platform; at very high budgets (the
 * benchmarks) a few grants share a window so one Redis round trip is not the ceiling.
 *
 * A 429 from any process sets a shared pause (a Redis key with a TTL); every process
 * reads it right after its grant, before the request leaves, and waits it out.
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
  /** Average spacing between grants, in ms. */
  readonly minTimeMs: number;
  /** The Redis key of the grant log. */
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

/**
 * How many grants share one log window, and how long the window is, so that no
 * one-second window can hold more than `requestsPerSecond` grants. A second is split
 * into ⌈1000 / windowMs⌉ pieces of at most windowMs, each holding at most `slots`:
 * slots × ⌈rps / (slots × (1 + m))⌉ ≤ rps / (1 + m) + slots ≤ rps when slots ≤ rps × m / (1 + m).
 * The window is whole milliseconds (the library's key TTL needs an integer), rounded up.
 */
export function budgetShape(requestsPerSecond: number, margin: number): { slots: number; windowMs: number } {
  const slots = Math.max(1, Math.floor((requestsPerSecond * margin) / (1 + margin)));
  const windowMs = Math.max(1, Math.ceil(((slots * 1000) / requestsPerSecond) * (1 + margin)));
  return { slots, windowMs };
}

/** The Redis keys of a budget start with this; tests that clean up need it. */
export function budgetKeyPrefix(keyPrefix: string): string {
  return `${keyPrefix}:platform-budget:`;
}

export function createRequestBudget(options: RequestBudgetOptions): RequestBudget {
  const margin = options.safetyMargin ?? 0.05;
  const { slots, windowMs } = budgetShape(options.requestsPerSecond, margin);
  const limiterId = `${budgetKeyPrefix(options.keyPrefix)}${options.origin}`;
  const pauseKey = `${options.keyPrefix}:platform-pause:${options.origin}`;
  const log = options.log;

  const redis = new Redis(options.redisUrl, { maxRetriesPerRequest: 3 });
  redis.on('error', (error: Error) => log.warn({ err: { message: error.message } }, 'request budget: Redis connection error'));
  // The library's Redis type is ioredis's plus the commands it defines on it.
  const limiter = new RedisSlidingWindowRateLimiter({ redis: redis as never, interval: windowMs, operationTimeout: 10_000 });

  async function pausedForMs(): Promise<number> {
    const ttl = await redis.pttl(pauseKey);
    return ttl > 0 ? ttl : 0;
  }

  // One waiter per process asks Redis at a time: the others queue here in order, so a
  // busy process does not poll Redis once per waiting request.
  let queue: Promise<void> = Promise.resolve();

  async function reserve(signal?: AbortSignal): Promise<void> {
    for (;;) {
      if (signal?.aborted) throw signal.reason;
      // The pause is read alongside the reservation: one round trip, not two.
      const [{ token, reset }, paused] = await Promise.all([limiter.reserve(limiterId, slots), pausedForMs()]);
      if (token) {
        if (paused === 0) return;
        // Paused by a 429 somewhere: this grant is given up; wait and ask again.
        await sleep(paused, signal);
        continue;
      }
      await sleep(Math.max(1, reset ?? 1), signal);
    }
  }

  return {
    minTimeMs: windowMs / slots,
    limiterId,
    pauseKey,
    acquire(signal?: AbortSignal): Promise<void> {
      const turn = queue.then(() => reserve(signal));
      queue = turn.catch(() => undefined);
      return turn;
    },
    async pauseFor(ms: number): Promise<void> {
      const whole = Math.max(1, Math.ceil(ms));
      const changed = await redis.eval(EXTEND_PAUSE_LUA, 1, pauseKey, String(whole), String(Date.now() + whole));
      if (changed === 1) log.warn({ pauseMs: whole, origin: options.origin }, 'platform rate limited: every process pauses');
    },
    pausedForMs,
    async close(): Promise<void> {
      await queue;
      if (redis.status !== 'end') await redis.quit().catch(() => redis.disconnect());
    },
  };
}
