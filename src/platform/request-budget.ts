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
 * reads it at each granted send time, right before the request leaves, and waits it
 * out (giving up that slot) instead of sending.
 *
 * Cost: bottleneck spends a few Redis round trips and a timer tick per grant (about
 * 1.5-2.5 ms on this machine), which matters only against an instant local server.
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

/** The hashes and sets bottleneck 2.19 keeps per limiter, as `b_<id>_<suffix>`. */
const BOTTLENECK_KEY_SUFFIXES = [
  'settings',
  'job_weights',
  'job_expirations',
  'job_clients',
  'client_running',
  'client_num_queued',
  'client_last_registered',
  'client_last_seen',
] as const;

/** How long the limiter's keys outlive the last process that touched them. */
const KEY_TTL_MS = 10 * 60_000;
const KEY_REFRESH_MS = 60_000;

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

  function makeLimiter(): Bottleneck {
    const made = new Bottleneck({
      id: limiterId,
      datastore: 'ioredis',
      connection,
      // A float is fine: the spacing lives in Redis as a number; only the wait handed
      // back is truncated to whole ms, which never accumulates across grants.
      minTime: minTimeMs,
      // Concurrency is not what the platform limits; spacing is.
      maxConcurrent: null,
      // Never wipe state other processes rely on.
      clearDatastore: false,
      // No bottleneck `timeout`: its key expiry needs a whole-ms minTime (PEXPIRE), and
      // bottleneck 2.19 cannot recover from expired keys on Redis 7, which prefixes its
      // bare error replies with "ERR " (we rebuild instead, below, and expire the keys
      // ourselves, see refreshExpiry). With maxConcurrent null a crashed process holds
      // no capacity: its reserved send times simply pass unused, so it blocks nobody.
      heartbeatInterval: 5_000,
      clientTimeout: 10_000,
    });
    made.on('error', (error: unknown) => {
      const message = error instanceof Error ? error.message : String(error);
      if (isLostState(message)) {
        void rebuild(made);
        return;
      }
      log.warn({ err: { message } }, 'request budget: limiter error');
    });
    return made;
  }

  /** With a shared connection bottleneck's disconnect returns undefined, not a promise. */
  async function detach(target: Bottleneck): Promise<void> {
    try {
      await (target.disconnect(false) as Promise<void> | undefined);
    } catch {
      // Closing anyway; nothing to recover.
    }
  }

  /** Bottleneck's own recovery misses these on Redis 7 ("ERR SETTINGS_KEY_NOT_FOUND"). */
  function isLostState(message: string): boolean {
    return message.includes('SETTINGS_KEY_NOT_FOUND') || message.includes('UNKNOWN_CLIENT');
  }

  let closed = false;
  let limiter = makeLimiter();
  let rebuilding: Promise<void> | undefined;

  /** The keys vanished (FLUSHALL, a restart without persistence): start a fresh limiter. */
  function rebuild(broken: Bottleneck): Promise<void> {
    if (limiter !== broken || closed) return rebuilding ?? Promise.resolve();
    log.warn({ origin: options.origin }, 'request budget: limiter state lost in Redis; re-creating it');
    limiter = makeLimiter();
    rebuilding = (async () => {
      await detach(broken);
      await applySettings(limiter);
    })().catch((error: unknown) => log.warn({ err: { message: String(error) } }, 'request budget: could not re-create the limiter'));
    return rebuilding;
  }

  // The settings hash outlives a restart: apply this process's spacing so a changed
  // budget takes effect now.
  async function applySettings(target: Bottleneck): Promise<void> {
    await target.ready();
    await target.updateSettings({ minTime: minTimeMs });
  }
  // Failure here is logged, not fatal: the limiter still works with the stored spacing.
  const settingsApplied = applySettings(limiter).catch((error: unknown) =>
    log.warn({ err: { message: String(error) } }, 'request budget: could not apply the spacing setting'),
  );

  /**
   * Resolves at this request's granted send time with the shared pause left (0 = go).
   * The pause is read inside the job, i.e. right before the request is released, so a
   * 429 seen by another process stops it. We resolve from inside the job rather than
   * awaiting `schedule()`, which also waits for bottleneck's bookkeeping round trip.
   */
  function grant(target: Bottleneck): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      target
        .schedule(async () => {
          resolve(await pausedForMs());
        })
        .catch(reject);
    });
  }

  /**
   * Keeps the limiter's keys alive while this process lives and lets them expire
   * KEY_TTL_MS after the last process stops, so per-origin state (a demo on random
   * ports, a test prefix) is not left in Redis forever.
   */
  async function refreshExpiry(): Promise<void> {
    const pipeline = redis.pipeline();
    for (const suffix of BOTTLENECK_KEY_SUFFIXES) pipeline.pexpire(`b_${limiterId}_${suffix}`, KEY_TTL_MS);
    await pipeline.exec();
  }
  const refreshTimer = setInterval(() => {
    refreshExpiry().catch(() => undefined);
  }, KEY_REFRESH_MS);
  refreshTimer.unref();
  void settingsApplied.then(() => refreshExpiry()).catch(() => undefined);

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
      await rebuilding;
      for (;;) {
        if (signal?.aborted) throw signal.reason;
        const current = limiter;
        let pausedMs: number;
        try {
          pausedMs = await grant(current);
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          if (!isLostState(message)) throw error;
          await rebuild(current);
          continue;
        }
        if (signal?.aborted) throw signal.reason;
        if (pausedMs === 0) return;
        // Paused by a 429 somewhere: this slot is given up; wait and queue again.
        await sleep(pausedMs, signal);
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
      clearInterval(refreshTimer);
      await settingsApplied;
      await rebuilding;
      await refreshExpiry().catch(() => undefined);
      await detach(limiter);
      await connection.disconnect(true).catch(() => undefined);
      if (redis.status !== 'end') redis.disconnect();
    },
  };
}
