import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { createRedisClient, type RedisClient } from '../lib/redis-client.ts';
import { clusterSafePrefix } from '../lib/redis-target.ts';
import { sleep } from './retry.ts';

/**
 * The request budget toward one platform origin, shared by every process that uses the
 * same Redis, key prefix and origin.
 *
 * Why not a fixed window: a fixed-window limiter lets a whole window's quota go in a
 * burst at each edge, so a sliding second can see twice the budget (measured with
 * BullMQ's limiter, shared/reference/baselines.md). We keep a log of grants in a Redis
 * sorted set (Redis clock, one Lua call per reservation) and grant only while fewer
 * than `slots` were granted in the last `windowMs`.
 *
 * At a whole budget under ~42/s (the default 10/s included) the log is a sliding second
 * and the margin: at most `budget` grants in any 1,000 × (1 + margin) ms (10 in 1,050 ms),
 * so any 11 grants in a row span at least 1,050 ms, the same 50 ms of slack for jitter
 * between a grant and the platform as one grant every 105 ms gave, but a request may go
 * as soon as the last second allows: the first ones of a run at once, and after a pause
 * (a page's rows being written, a read one page at a time) the budget not used meanwhile,
 * where evenly spaced grants lost it for good (measured: a first load of 10,000 results at
 * 10/s took 0.94 of the budget's time, docs/benchmarks.md).
 *
 * Otherwise the log window is short: with `slots` ≤ budget / 21 and `windowMs` =
 * slots × 1000 / budget × (1 + margin), any one second holds at most
 * slots × ⌈1000 / windowMs⌉ ≤ budget grants (see `budgetShape`); under ~42/s that is one
 * slot, a grant every 1000 / budget × (1 + margin) ms (a budget that is not a whole number).
 *
 * At high budgets (the benchmarks, a big backfill) a Redis round trip per request
 * costs more CPU than the request's own parsing, so one call reserves a small batch
 * (at least as many grants as requests are waiting; more, up to 16, while requests keep
 * coming faster than `grantLeaseMs`). A grant not used within that lease is dropped
 * (budget left unused, never exceeded). Half of the margin's slack pays for the lease, half
 * still absorbs jitter: any second of arrivals then holds grants reserved within
 * 1000 + 2 × lease ms, which `grantLeaseMs` keeps within slots × ⌊budget / slots⌋ ≤ budget.
 * Under ~42/s (the default included: `pacedBudget`) there is no lease and no batch: every
 * grant is reserved for a request that is waiting, as before.
 *
 * A 429 from any process sets a shared pause (a Redis key with a TTL); the reservation
 * script reads it before granting, so no grant is handed out while it lasts. Grants
 * this process already holds are dropped when it sees a 429 itself; another process's
 * held grants (at most one lease, ≤ ~30 ms, or one grant dated ahead, ≤ half the budget's
 * interval) may
 * still go out.
 *
 * Under ~42/s, grants are dated up to half the budget's interval ahead (RESERVE_LUA: a
 * schedule, not a timer's lateness added to every grant), and a process hands out a grant
 * only when its previous ⌊rps⌋ requests actually left (`sent`) over at least 1000 × (1 + margin / 2) ms
 * (`sendSpacing`), so a request held up on a stalled process cannot make one second at the
 * platform hold more than the budget, and the stall does not push back every later request.
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
  /**
   * The request of the oldest grant handed out and not yet reported has just been
   * dispatched. Under ~42/s (`pacedBudget`), this process hands out a grant only
   * when its last ⌊rps⌋ requests left at least 1000 × (1 + margin / 2) ms ago counted from
   * the oldest (`sendSpacing`): a request held up between its grant and the wire (the
   * process stalled on a busy machine) must not make a second at the wire hold more than
   * the budget, which the Redis log alone (spacing at grant time) allows. Optional: a
   * budget without it spaces at grant time only.
   */
  sent?(): void;
  /** Makes every process wait `ms` from now before its next request (only ever extends). */
  pauseFor(ms: number): Promise<void>;
  /** Milliseconds left of the shared pause (0 when none). */
  pausedForMs(): Promise<number>;
  /** Average spacing between grants, in ms. */
  readonly minTimeMs: number;
  /** How long a grant reserved ahead may wait in this process before it is dropped (0: none are). */
  readonly leaseMs: number;
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
 * Reserves up to ARGV[3] grants at once. KEYS[1]: the grant log (members scored by Redis
 * time in µs), KEYS[2]: the pause. ARGV: windowMs, slots, wanted, key TTL in seconds,
 * lookahead ms. Returns {granted, ms to wait for a free slot, ms left of the pause, ms
 * until the grant's time, the grant's score (Redis time in µs; 0 when none)}. Members carry
 * the count so grants of one call, or of two calls in the same µs, never collapse into one.
 *
 * Lookahead (paced budgets only, see `pacedBudget`): a caller asking at most `lookahead` ms
 * before a slot frees gets the grant dated when it frees, exactly one window after the grant
 * whose slot it takes (the log's `slots`-th latest), and
 * waits for that moment itself. Grants then follow a schedule instead of each one being
 * late by a timer's lateness plus a round trip (about 5 ms a grant on a busy machine,
 * 5 s over a burst of 1,000 at 10/s); their spacing in the log is still a full window.
 */
const RESERVE_LUA = `
local paused = redis.call('PTTL', KEYS[2])
if paused > 0 then return {0, 0, paused, 0, 0} end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local window = tonumber(ARGV[1]) * 1000
local slots = tonumber(ARGV[2])
local lookahead = tonumber(ARGV[5]) * 1000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local used = redis.call('ZCARD', KEYS[1])
if used >= slots then
  local freed = redis.call('ZRANGE', KEYS[1], used - slots, used - slots, 'WITHSCORES')
  local at = now + 1000
  if freed[2] then at = tonumber(freed[2]) + window end
  if lookahead > 0 and at - now <= lookahead then
    redis.call('ZADD', KEYS[1], at, time[1] .. '.' .. time[2] .. ':a')
    redis.call('EXPIRE', KEYS[1], ARGV[4])
    return {1, 0, 0, math.max(0, math.ceil((at - now) / 1000)), at}
  end
  return {0, math.max(1, math.ceil((at - lookahead - now) / 1000)), 0, 0, 0}
end
local n = math.min(slots - used, tonumber(ARGV[3]))
local args = {}
for i = 1, n do
  args[#args + 1] = now
  args[#args + 1] = time[1] .. '.' .. time[2] .. ':' .. (used + i)
end
redis.call('ZADD', KEYS[1], unpack(args))
redis.call('EXPIRE', KEYS[1], ARGV[4])
return {n, 0, 0, 0, now}`;

/** The debug line of each reservation that got grants: `granted` grants scored `grantedAtUs` (Redis time, µs) in the log `budget`. */
export const GRANT_LOG_MESSAGE = 'request budget: granted';

/** Grants asked for in one reservation at most: small, so a misjudged batch wastes little. */
const MAX_BATCH = 16;

/**
 * How many grants share one log window, and how long the window is, so that no
 * one-second window can hold more than `requestsPerSecond` grants. A second is split
 * into ⌈1000 / windowMs⌉ pieces of at most windowMs, each holding at most `slots`:
 * slots × ⌈rps / (slots × (1 + m))⌉ ≤ rps / (1 + m) + slots ≤ rps when slots ≤ rps × m / (1 + m).
 * The window is whole milliseconds (the key TTL needs an integer), rounded up.
 * A paced whole budget (`pacedBudget`, 2/s and up) is one piece instead: `rps` slots in a
 * window of 1000 × (1 + m) ms, at least a second, so any second holds at most `rps`; its
 * grants follow one another as closely as one slot's over any second, but need not be
 * evenly spaced (the opening of a run, and time not used, are not lost).
 */
export function budgetShape(requestsPerSecond: number, margin: number): { slots: number; windowMs: number } {
  if (pacedBudget(requestsPerSecond, margin) && Number.isInteger(requestsPerSecond) && requestsPerSecond >= 2) {
    return { slots: requestsPerSecond, windowMs: Math.ceil(1000 * (1 + margin)) };
  }
  const slots = Math.max(1, Math.floor((requestsPerSecond * margin) / (1 + margin)));
  const windowMs = Math.max(1, Math.ceil(((slots * 1000) / requestsPerSecond) * (1 + margin)));
  return { slots, windowMs };
}

/**
 * Under ~42/s (budget × margin / (1 + margin) < 2): each grant is reserved for a request that
 * is waiting (no batch, no lease), dated ahead by up to half the budget's interval, and a
 * process spaces its own requests by their departures (`sendSpacing`).
 */
export function pacedBudget(requestsPerSecond: number, margin: number): boolean {
  return Math.floor((requestsPerSecond * margin) / (1 + margin)) < 2;
}

/**
 * How a process spaces its own requests of one budget at the wire (a paced budget): any
 * `sendsPerSpan` + 1 in a row span at least `sendSpanMs`, so no second holds more than the
 * budget (⌊rps⌋ in a span of ≥ 1 s plus half the margin; for a budget under 1/s, one per its
 * interval). Judged on the requests' departures, not their grants: a request that leaves
 * late (its process stalled) pushes the next ones back only as far as the span needs, where a
 * fixed gap after every request added each stall to the whole load (measured: 40 requests at
 * 10/s took 10–50 s instead of 4 on a machine at load average 10–20).
 */
export function sendSpacing(requestsPerSecond: number, margin: number): { sendsPerSpan: number; sendSpanMs: number } {
  const sendsPerSpan = Math.max(1, Math.floor(requestsPerSecond));
  return { sendsPerSpan, sendSpanMs: Math.max((sendsPerSpan * 1000) / requestsPerSecond, 1000) * (1 + margin / 2) };
}

/**
 * How long a grant reserved ahead may wait locally: half the slack the shape leaves.
 * With p = ⌊rps / slots⌋ pieces of windowMs, grants reserved within 1000 + 2 × lease ≤
 * p × windowMs ms number at most slots × p ≤ rps, so a request sent up to one lease
 * after its grant, and arriving up to one more lease later, still keeps every second
 * within the budget. 0 for a paced budget: nothing is reserved ahead.
 */
export function grantLeaseMs(requestsPerSecond: number, margin: number): number {
  const { slots, windowMs } = budgetShape(requestsPerSecond, margin);
  if (pacedBudget(requestsPerSecond, margin)) return 0;
  const pieces = Math.floor(requestsPerSecond / slots);
  return Math.max(0, Math.floor((pieces * windowMs - 1000) / 2));
}

/** The Redis keys of a budget start with this; tests that clean up need it. */
export function budgetKeyPrefix(keyPrefix: string): string {
  return `${keyPrefix}:platform-budget:`;
}

/**
 * The two keys of one budget: its grant log and its pause (RESERVE_LUA's KEYS[1] and
 * KEYS[2]). The only place they are named: `identity` is whose budget it is (today the
 * platform origin). On a Cluster `keyPrefix` is a hash tag ({trainsync}, see
 * clusterSafePrefix), so both keys hash to one slot and the script runs there.
 */
export function budgetKeys(keyPrefix: string, identity: string): { log: string; pause: string } {
  return { log: `${budgetKeyPrefix(keyPrefix)}${identity}`, pause: `${keyPrefix}:platform-pause:${identity}` };
}

/**
 * One Redis connection for every budget of a process on the same REDIS_URL, counted by its
 * users: a worker serving 1,000 organisations has 1,000 budgets (one per key), and a
 * connection each cost a socket, a ready check and buffers per organisation on every worker
 * (and 4,000 clients on Redis with four workers). The reservations are independent Lua calls,
 * so they share one connection as any pipelined commands do.
 */
const budgetConnections = new Map<string, { redis: BudgetRedis; users: number }>();

function shareBudgetRedis(redisUrl: string): { redis: BudgetRedis; release(): Promise<void> } {
  let entry = budgetConnections.get(redisUrl);
  if (!entry || entry.redis.status === 'end') {
    // A single server, the master behind Sentinel, or a Cluster, as REDIS_URL says.
    const redis = createRedisClient(redisUrl, { redis: { maxRetriesPerRequest: 3 } }) as BudgetRedis;
    // Each budget listens for the outage itself (its own debug line); there can be many.
    redis.setMaxListeners(0);
    redis.defineCommand('trainsyncReserve', { numberOfKeys: 2, lua: RESERVE_LUA });
    entry = { redis, users: 0 };
    budgetConnections.set(redisUrl, entry);
  }
  const mine = entry;
  mine.users += 1;
  let released = false;
  return {
    redis: mine.redis,
    async release() {
      if (released) return;
      released = true;
      mine.users -= 1;
      if (mine.users > 0) return;
      if (budgetConnections.get(redisUrl) === mine) budgetConnections.delete(redisUrl);
      if (mine.redis.status !== 'end') await mine.redis.quit().catch(() => mine.redis.disconnect());
    },
  };
}

interface Waiter {
  resolve(): void;
  reject(reason: unknown): void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

type ReserveReply = [granted: number, waitMs: number, pausedMs: number, delayMs: number, grantedAtUs: number];

type BudgetRedis = RedisClient & {
  trainsyncReserve(log: string, pause: string, windowMs: number, slots: number, wanted: number, ttlSeconds: number, lookaheadMs: number): Promise<ReserveReply>;
};

export function createRequestBudget(options: RequestBudgetOptions): RequestBudget {
  const margin = options.safetyMargin ?? 0.05;
  const { slots, windowMs } = budgetShape(options.requestsPerSecond, margin);
  const leaseMs = grantLeaseMs(options.requestsPerSecond, margin);
  const maxBatch = leaseMs > 0 ? Math.min(slots, MAX_BATCH) : 1;
  // Paced: grants are dated ahead by up to half the budget's interval (see RESERVE_LUA).
  const lookaheadMs = pacedBudget(options.requestsPerSecond, margin) ? Math.floor(windowMs / slots / 2) : 0;
  const ttlSeconds = Math.ceil(windowMs / 1000) + 1;
  // Tagged here too (a no-op for config's prefix, already tagged): a caller passing its own prefix stays cluster-safe.
  const keys = budgetKeys(clusterSafePrefix(options.keyPrefix, options.redisUrl), options.origin);
  const limiterId = keys.log;
  const pauseKey = keys.pause;
  const log = options.log;

  const shared = shareBudgetRedis(options.redisUrl);
  const redis = shared.redis;
  // ioredis reports every failed reconnect (about one a second in an outage). The process's
  // queue connections already log an outage when it starts and ends; here a request that
  // cannot get a grant fails with BUDGET_UNAVAILABLE, so one debug line per outage is enough.
  let unreachable = false;
  const onError = (error: Error): void => {
    if (unreachable) return;
    unreachable = true;
    log.debug({ err: { message: error.message } }, 'request budget: Redis unreachable');
  };
  const onReady = (): void => {
    unreachable = false;
  };
  redis.on('error', onError);
  redis.on('ready', onReady);

  async function pausedForMs(): Promise<number> {
    const ttl = await redis.pttl(pauseKey);
    return ttl > 0 ? ttl : 0;
  }

  // Requests wait here in order; one reservation at a time serves them all, so a busy
  // process does not poll Redis once per waiting request.
  const waiters: Waiter[] = [];
  let pumping = false;
  let pump: Promise<void> = Promise.resolve();
  // Grants in hand, usable until `heldUntil` (performance.now() ms).
  let held = 0;
  let heldUntil = 0;
  // Grants per reservation, grown like a slow start: doubled when the next request came
  // within a lease of the last reply (a grant held ahead would have served it), halved
  // when held grants lapsed unused. A steady or sequential caller stays at 1.
  let batch = 1;
  let lapsed = false;
  let lastReplyAt = Number.NEGATIVE_INFINITY;
  // Paced: when this process's last requests left (each its grant's hand-out, or when
  // `sent` reported it, the later), the last `sendsPerSpan` of them, oldest first.
  const { sendsPerSpan, sendSpanMs } = sendSpacing(options.requestsPerSecond, margin);
  const sends: number[] = [];
  // Of `sends`, the first `reported` have had their `sent` (hand-outs are reported in order).
  let reported = 0;
  /** The earliest moment the next request may leave: `sendsPerSpan` in a row span at least `sendSpanMs`. */
  const nextSendAt = (): number => (sends.length < sendsPerSpan ? Number.NEGATIVE_INFINITY : sends[0]! + sendSpanMs);
  const recordSend = (at: number): void => {
    sends.push(at);
    if (sends.length > sendsPerSpan) {
      sends.shift();
      reported = Math.max(0, reported - 1);
    }
  };
  // Moved by every pauseFor: a grant that waited for its spacing through a 429 is dropped.
  let pauses = 0;

  const takeHeld = (): boolean => {
    if (held === 0) return false;
    if (performance.now() > heldUntil) {
      held = 0;
      lapsed = true;
      return false;
    }
    held -= 1;
    return true;
  };

  const settle = (waiter: Waiter, error?: unknown): void => {
    if (waiter.onAbort) waiter.signal?.removeEventListener('abort', waiter.onAbort);
    if (error === undefined) waiter.resolve();
    else waiter.reject(error);
  };

  async function run(): Promise<void> {
    try {
      while (waiters.length > 0) {
        if (takeHeld()) {
          settle(waiters.shift()!);
          continue;
        }
        if (lapsed) batch = Math.max(1, batch >> 1);
        else if (performance.now() - lastReplyAt <= leaseMs) batch = Math.min(maxBatch, batch * 2);
        lapsed = false;
        const wanted = Math.min(maxBatch, Math.max(waiters.length, batch));
        let reply: ReserveReply;
        try {
          reply = await redis.trainsyncReserve(limiterId, pauseKey, windowMs, slots, wanted, ttlSeconds, lookaheadMs);
        } catch (error) {
          for (const waiter of waiters.splice(0)) settle(waiter, error);
          return;
        }
        const [granted, waitMs, paused, delayMs, grantedAtUs] = reply;
        lastReplyAt = performance.now();
        if (granted > 0) {
          // Each grant as Redis recorded it (its score: Redis time, the one clock every process shares):
          // what LOG_LEVEL=debug shows to check the budget, and what the budget tests count.
          log.debug({ budget: limiterId, granted, grantedAtUs }, GRANT_LOG_MESSAGE);
          if (maxBatch === 1) {
            // Not before the grant's own time (lookahead), nor sooner after the last request's
            // actual departure than the send gap (see `sent`): a grant that waits here is late, never early.
            const before = pauses;
            // The grant's moment on this process's clock: Redis dated it from its own clock before
            // answering, so the reply's arrival plus the (rounded up) delay is never before it. A timer
            // may fire up to a millisecond early (libuv's loop time is whole milliseconds), so the
            // loop checks the moment itself, not only that the timer ran.
            const due = lastReplyAt + delayMs;
            const left = (): number => Math.max(due, nextSendAt()) - performance.now();
            let early = left();
            for (;;) {
              if (early > 0) await sleep(early);
              // After a stall, timers run before I/O: let the last request's dispatch land before judging the span.
              await new Promise((resolve) => setImmediate(resolve));
              early = left();
              if (early <= 0) break;
            }
            // A 429 meanwhile: this grant is dropped (the pause is waited for on the next turn).
            if (pauses !== before) continue;
            if (waiters.length > 0) recordSend(performance.now());
          }
          // Waiting requests go at once; only the grants reserved ahead are held (and may lapse).
          let left = granted;
          while (left > 0 && waiters.length > 0) {
            settle(waiters.shift()!);
            left -= 1;
          }
          held = left;
          heldUntil = lastReplyAt + leaseMs;
          continue;
        }
        await sleep(Math.max(1, paused > 0 ? paused : waitMs));
      }
    } finally {
      // Cleared in the same turn as the loop's last check: a later acquire starts a new run.
      pumping = false;
    }
  }

  return {
    minTimeMs: windowMs / slots,
    leaseMs,
    sent(): void {
      if (maxBatch !== 1) return;
      const now = performance.now();
      // The oldest hand-out not yet reported left now (requests go out in the order of their grants).
      if (reported < sends.length) {
        sends[reported] = Math.max(sends[reported]!, now);
        reported += 1;
      } else recordSend(now);
    },
    limiterId,
    pauseKey,
    acquire(signal?: AbortSignal): Promise<void> {
      if (signal?.aborted) return Promise.reject(signal.reason);
      if (waiters.length === 0 && takeHeld()) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const waiter: Waiter = { resolve, reject, signal, onAbort: undefined };
        if (signal) {
          waiter.onAbort = (): void => {
            const at = waiters.indexOf(waiter);
            if (at >= 0) waiters.splice(at, 1);
            reject(signal.reason);
          };
          signal.addEventListener('abort', waiter.onAbort, { once: true });
        }
        waiters.push(waiter);
        if (!pumping) {
          pumping = true;
          pump = run();
        }
      });
    },
    async pauseFor(ms: number): Promise<void> {
      // Grants reserved before the 429 must not go out during the pause.
      held = 0;
      pauses += 1;
      const whole = Math.max(1, Math.ceil(ms));
      const changed = await redis.eval(EXTEND_PAUSE_LUA, 1, pauseKey, String(whole), String(Date.now() + whole));
      if (changed === 1) log.warn({ pauseMs: whole, origin: options.origin }, 'platform rate limited: every process pauses');
    },
    pausedForMs,
    async close(): Promise<void> {
      await pump;
      redis.off('error', onError);
      redis.off('ready', onReady);
      await shared.release();
    },
  };
}
