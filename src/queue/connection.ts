import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { describeRedisError, InfrastructureError, isNotRedis, maskUrl } from '../lib/infra-errors.ts';
import type { Logger } from 'pino';
import { OutageLog } from '../lib/outage-log.ts';
import { connectingLine, CONNECTING_NOTICE_MS } from '../lib/connecting-notice.ts';
import { createRedisClient, isCluster, type RedisClient } from '../lib/redis-client.ts';
import { redisTarget } from '../lib/redis-target.ts';

/**
 * How a process treats an unreachable Redis. `persistent` (the worker): retry forever
 * with capped backoff; the outage is logged when it starts and when it ends.
 * `one-shot` (sync, status, provision…): retry for `timeoutMs`, then every connection
 * gives up, so pending commands fail and the command exits with one line.
 */
export type RedisMode = 'persistent' | 'one-shot';

export interface RedisConnectionsOptions {
  url: string;
  mode: RedisMode;
  /** One-shot only: how long Redis may stay unreachable before commands fail (TRAINSYNC_REDIS_TIMEOUT_MS). */
  timeoutMs: number;
  log: Logger;
}

/** What the rest of the process may ask about Redis. */
export interface RedisStatus {
  /** True between a connection failure and the next successful (re)connect. */
  readonly isDown: boolean;
  /** False while the primary connection is connecting, reconnecting or gave up. */
  readonly isReady: boolean;
  /**
   * PING on the primary connection. Rejects with an InfrastructureError naming REDIS_URL
   * when no answer comes within `timeoutMs`; with `failFast` at once when the connection
   * is not up (health checks must not queue commands behind an outage).
   */
  check(timeoutMs: number, options?: { failFast?: boolean }): Promise<void>;
  /** The InfrastructureError for "Redis is unreachable", from the last connection error seen. */
  unreachable(cause?: unknown, waitedMs?: number): InfrastructureError;
  /** Calls `listener` when a connection is ready again after it dropped (Redis restarted, failed over, came back). */
  onReconnect(listener: () => void): () => void;
}

/** Backoff between reconnect attempts: 100 ms doubling up to 2 s. */
const MAX_RETRY_DELAY_MS = 2_000;
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * Every Redis connection of one process, and one outage state for all of them.
 *
 * Each connection opened here (and each copy BullMQ makes of one with `duplicate()`:
 * Workers and QueueEvents never use the instance they are given, they duplicate it)
 * reports its errors and reconnects here, so an outage is logged once, not once per
 * connection and retry, and no connection ever lacks an 'error' listener (ioredis
 * prints a stack trace for an unhandled one). The retry strategy is also where ioredis
 * says "this connection dropped without being closed": it starts the outage clock.
 */
export class RedisConnections implements RedisStatus {
  readonly url: string;
  readonly mode: RedisMode;
  readonly timeoutMs: number;
  /**
   * Queues, health checks and the template BullMQ duplicates for Workers and QueueEvents:
   * a Redis (one server, or the master behind Sentinel) or a Cluster, as REDIS_URL says.
   */
  readonly primary: RedisClient;
  private readonly outage: OutageLog;
  private readonly log: Logger;
  private failingSince: number | undefined;
  private lastError: unknown;
  /**
   * The first reply that was not Redis's protocol (REDIS_URL at an HTTP port): kept,
   * because the socket's reset or close that follows it says nothing of the cause.
   */
  private foreignReply: unknown;
  private gaveUp = false;
  /** A one-shot connection that never got through and was refused: given up at once, not after the timeout. */
  private refusedAtStart = false;
  private everReady = false;
  /** A connection opened (TCP) since the last retry: if it is retried before 'ready', the server dropped it. */
  private connectedSinceRetry = false;
  /** Connections the server accepted and closed before Redis ever answered. */
  private droppedBeforeReady = 0;
  private failoverLoggedAt = Number.NEGATIVE_INFINITY;
  /** REDIS_URL names a Sentinel set-up or a Cluster, where masters get replaced. */
  private readonly replicated: boolean;
  private closing = false;
  private readonly reconnectListeners = new Set<() => void>();

  constructor(options: RedisConnectionsOptions) {
    this.url = options.url;
    this.mode = options.mode;
    this.timeoutMs = options.timeoutMs;
    this.log = options.log;
    this.replicated = redisTarget(options.url).kind !== 'single';
    // A one-shot command says it all in its one error line; its outage log is for LOG_LEVEL=debug.
    const outageLog = options.mode === 'one-shot' && !options.log.isLevelEnabled('debug') ? options.log.child({}, { level: 'error' }) : options.log;
    this.outage = new OutageLog('Redis', outageLog, {
      target: `${maskUrl(options.url)} (REDIS_URL)`,
      consequence: options.mode === 'persistent' ? 'retrying; jobs resume when it is back' : `giving up after ${options.timeoutMs} ms (TRAINSYNC_REDIS_TIMEOUT_MS)`,
    });
    this.primary = this.open();
  }

  /** A new connection, watched like every other (BullMQ requires `maxRetriesPerRequest: null` of Workers and QueueEvents). */
  open(): RedisClient {
    const options: RedisOptions = {
      maxRetriesPerRequest: null,
      enableReadyCheck: true,
      connectTimeout: this.mode === 'one-shot' ? Math.min(CONNECT_TIMEOUT_MS, this.timeoutMs) : CONNECT_TIMEOUT_MS,
      // disconnect() waits this long for a socket to close before destroying it; a dead
      // socket never closes, and the default 2 s would hold a one-shot command's exit.
      disconnectTimeout: 200,
    };
    // The same retry for a server, for the sentinels and for a whole Cluster: one outage clock.
    return this.watch(createRedisClient(this.url, { redis: options, retry: (times) => this.retryDelay(times) }));
  }

  get isDown(): boolean {
    return this.outage.isDown || this.gaveUp;
  }

  get isReady(): boolean {
    return this.primary.status === 'ready';
  }

  /**
   * Records an error from a connection, a Queue, a Worker or QueueEvents. Returns true
   * when it is a connection or login failure (recorded as the outage, logged only if it
   * starts one), false for anything else, which the caller logs as it always did.
   */
  failed(error: unknown): boolean {
    // Behind Sentinel or on a Cluster only: a single server reports these as it always did.
    const failover = this.replicated ? failoverReply(error) : undefined;
    if (failover !== undefined) {
      this.failingOver(failover);
      return true;
    }
    const message = describeRedisError(error, this.url);
    if (message === undefined) return false;
    // Connections closing at shutdown report "Connection is closed": not an outage.
    if (this.closing) return true;
    if (this.foreignReply === undefined && isNotRedis(error)) this.foreignReply = error;
    this.lastError = error;
    this.failingSince ??= Date.now();
    this.outage.down(shortReason(message, this.url));
    return true;
  }

  async check(timeoutMs: number, options: { failFast?: boolean } = {}): Promise<void> {
    if (options.failFast && !this.isReady) throw this.unreachable();
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    // A first connection that takes a while says what it waits for, rather than a blank screen until the timeout.
    const notice = this.everReady ? undefined : setTimeout(() => this.log.warn({ redis: maskUrl(this.url), waitMs: timeoutMs }, connectingLine(maskUrl(this.url), timeoutMs, 'Redis', 'REDIS_URL', this.mode === 'one-shot' && timeoutMs === this.timeoutMs ? 'TRAINSYNC_REDIS_TIMEOUT_MS' : undefined)), CONNECTING_NOTICE_MS);
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        timedOut = true;
        reject(new Error(`no answer within ${formatSeconds(timeoutMs)}`));
      }, timeoutMs);
    });
    const ping = this.primary.ping();
    ping.catch(() => undefined);
    try {
      await Promise.race([ping, timeout]);
    } catch (error) {
      throw this.unreachable(error, timedOut ? timeoutMs : undefined);
    } finally {
      clearTimeout(timer);
      clearTimeout(notice);
    }
  }

  unreachable(cause?: unknown, waitedMs?: number): InfrastructureError {
    if (this.foreignReply !== undefined) {
      // Not Redis at all: no "waited" (nothing was waited for), and exit 2, the setting's fault.
      return new InfrastructureError('redis', describeRedisError(this.foreignReply, this.url)!, { cause: this.foreignReply, misconfigured: true });
    }
    const described =
      this.droppedBeforeReady >= DROPS_BEFORE_GIVING_UP && !this.everReady
        ? `cannot connect to Redis at ${maskUrl(this.url)} (REDIS_URL): the server accepted the connection and closed it before answering, ${this.droppedBeforeReady} times; is REDIS_URL the host and port of a Redis server (rediss:// if it needs TLS), and does it accept this client?`
        : (describeRedisError(this.lastError, this.url) ?? describeRedisError(cause, this.url));
    const setting = (ms: number): string => (this.mode === 'one-shot' && ms === this.timeoutMs ? ', TRAINSYNC_REDIS_TIMEOUT_MS' : '');
    const waited =
      this.refusedAtStart ? ''
      : waitedMs !== undefined ? ` (waited ${formatSeconds(waitedMs)}${setting(waitedMs)})`
      : this.gaveUp ? ` (gave up after ${formatSeconds(this.timeoutMs)}${setting(this.timeoutMs)})`
      : '';
    const message =
      described === undefined
        ? `cannot reach Redis at ${maskUrl(this.url)} (REDIS_URL): ${cause instanceof Error ? cause.message : 'no answer'}; is the server up, and is REDIS_URL right?${waited}`
        : `${described}${waited}`;
    return new InfrastructureError('redis', message, { cause: cause ?? this.lastError });
  }

  onReconnect(listener: () => void): () => void {
    this.reconnectListeners.add(listener);
    return () => this.reconnectListeners.delete(listener);
  }

  /** Disconnects the primary connection; errors from here on are the shutdown's, not an outage. */
  close(): void {
    this.closing = true;
    this.reconnectListeners.clear();
    this.primary.disconnect();
  }

  private watch<C extends RedisClient>(client: C): C {
    client.on('error', (error: unknown) => {
      if (!this.failed(error)) this.log.warn({ err: error }, 'Redis connection error');
    });
    client.on('ready', () => this.ready());
    client.on('connect', () => (this.connectedSinceRetry = true));
    if (isCluster(client)) {
      // One node dropping (a failover) is the Cluster's to route around; an outage is the
      // whole Cluster unreachable, which it reports as an 'error' of its own.
      client.on('node error', (error: unknown, node: string) => this.log.debug({ err: error, node }, 'Redis Cluster node error'));
      const duplicate = Cluster.prototype.duplicate;
      client.duplicate = (nodes?: unknown[], override?: ClusterOptions): Cluster => this.watch(duplicate.call(client, nodes, { ...override, lazyConnect: false }));
    } else {
      // Copies BullMQ makes (Worker, QueueEvents) are watched too, and connect at once even if the original is lazy.
      const redis = client as Redis;
      redis.duplicate = (override?: Partial<RedisOptions>): Redis => this.watch(new Redis({ ...redis.options, lazyConnect: false, ...override }));
    }
    return client;
  }

  /**
   * A master turning replica (Sentinel, CLUSTER FAILOVER) ends blocked reads with
   * UNBLOCKED and answers writes with READONLY; BullMQ and ioredis retry on the new
   * master. Not an outage, and not each Worker's and QueueEvents' error: one line.
   */
  private failingOver(reply: string): void {
    const now = Date.now();
    if (now - this.failoverLoggedAt < FAILOVER_LOG_GAP_MS) return;
    this.failoverLoggedAt = now;
    this.log.info({ reply }, 'Redis is failing over; commands go on with the new master');
  }

  private ready(): void {
    this.everReady = true;
    this.refusedAtStart = false;
    const dropped = this.failingSince !== undefined || this.outage.isDown || this.gaveUp;
    this.failingSince = undefined;
    this.lastError = undefined;
    this.foreignReply = undefined;
    this.gaveUp = false;
    this.outage.up();
    if (!dropped) return;
    for (const listener of this.reconnectListeners) {
      try {
        listener();
      } catch (error) {
        this.log.error({ err: error }, 'Redis reconnect listener failed');
      }
    }
  }

  /** ioredis calls this only for a connection that dropped or failed to connect, never for one we closed. */
  private retryDelay(times: number): number | null {
    const now = Date.now();
    this.failingSince ??= now;
    if (this.connectedSinceRetry && !this.everReady) this.droppedBeforeReady += 1;
    this.connectedSinceRetry = false;
    const delay = Math.min(100 * 2 ** Math.min(times - 1, 5), MAX_RETRY_DELAY_MS);
    if (this.mode === 'persistent') return delay;
    // Nothing listens there (or the name does not resolve), or what listens is not Redis:
    // waiting would not change that for a command a person just typed, so it fails now,
    // naming REDIS_URL and how to start it (or what answered instead).
    // So is a server that takes the connection and closes it again before answering a
    // single command (a TLS-only port, a proxy with nothing behind it, another protocol
    // that hangs up): after a few such drops, not after the whole timeout.
    if (!this.everReady && (isRefusal(this.lastError) || this.foreignReply !== undefined || this.droppedBeforeReady >= DROPS_BEFORE_GIVING_UP)) {
      this.gaveUp = true;
      this.refusedAtStart = true;
      return null;
    }
    const left = this.failingSince + this.timeoutMs - now;
    if (left <= 0) {
      // Ends the connection: ioredis rejects every pending command with "Connection is closed".
      this.gaveUp = true;
      return null;
    }
    return Math.min(delay, left);
  }
}

/** Drops before Redis ever answered that end a one-shot command's wait (backoff 100, 200, 400 ms: under a second). */
const DROPS_BEFORE_GIVING_UP = 3;

/** One failover line per this gap: the replies of one failover come from every connection within a second or two. */
const FAILOVER_LOG_GAP_MS = 30_000;

/** Replies of a master being replaced or of slots moving (ioredis follows MOVED/ASK itself; these reach us when retries ran out). */
const FAILOVER_REPLY = /^(UNBLOCKED|READONLY|TRYAGAIN|CLUSTERDOWN|MASTERDOWN|LOADING)\b/;

function failoverReply(error: unknown): string | undefined {
  const message = error instanceof Error ? error.message : undefined;
  return message !== undefined && FAILOVER_REPLY.test(message) ? message.split(' ')[0] : undefined;
}

/** describeRedisError's sentence without the "cannot connect to Redis at URL (REDIS_URL): " the outage log says itself. */
function shortReason(message: string, url: string): string {
  const prefix = `cannot connect to Redis at ${maskUrl(url)} (REDIS_URL): `;
  if (message.startsWith(prefix)) return message.slice(prefix.length);
  // describeNotRedis's "REDIS_URL: host:port answered, but not as Redis…": the log names REDIS_URL already.
  return message.startsWith('REDIS_URL: ') ? message.slice('REDIS_URL: '.length) : message;
}

/** A connection refused or a host name that does not resolve: answers that do not change by waiting. */
function isRefusal(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, lastNodeError } = error as { code?: unknown; lastNodeError?: unknown };
  // A Cluster none of whose seed nodes answered says why in `lastNodeError`.
  return code === 'ECONNREFUSED' || code === 'ENOTFOUND' || (lastNodeError !== undefined && isRefusal(lastNodeError));
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}
