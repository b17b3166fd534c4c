import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { redisTarget, type RedisTarget } from './redis-target.ts';

/** A connection to whatever REDIS_URL names: BullMQ and our own commands take either. */
export type RedisClient = Redis | Cluster;

export interface RedisClientOptions {
  /** Per-connection options (every node's, on a Cluster). */
  redis: RedisOptions;
  /**
   * When a lost connection is retried: ioredis asks `retryStrategy` of a single server,
   * `sentinelRetryStrategy` when no sentinel answers, `clusterRetryStrategy` when no
   * Cluster node does. One strategy for all three keeps every mode's outage the same.
   */
  retry?: (times: number) => number | null;
}

/**
 * A master turned replica (a Sentinel or Cluster failover) answers writes with READONLY:
 * reconnect and resend, so the command reaches the new master (behind Sentinel ioredis
 * asks the sentinels again; a Cluster refreshes its slots on MOVED).
 */
function reconnectOnReadonly(error: Error): 2 | false {
  return error.message.startsWith('READONLY') ? 2 : false;
}

export function createRedisClient(url: string, options: RedisClientOptions): RedisClient {
  return createClientFor(redisTarget(url), options);
}

export function createClientFor(target: RedisTarget, options: RedisClientOptions): RedisClient {
  const { redis, retry } = options;
  const withRetry = retry === undefined ? redis : { ...redis, retryStrategy: retry };
  switch (target.kind) {
    // Exactly today's construction: the URL as ioredis reads it.
    case 'single':
      return new Redis(target.url, withRetry);
    case 'sentinel':
      return new Redis({
        ...withRetry,
        sentinels: target.sentinels,
        name: target.name,
        db: target.db,
        ...(target.username ? { username: target.username } : {}),
        ...(target.password ? { password: target.password } : {}),
        ...(target.sentinelUsername ? { sentinelUsername: target.sentinelUsername } : {}),
        ...(target.sentinelPassword ? { sentinelPassword: target.sentinelPassword } : {}),
        ...(target.tls ? { tls: {}, enableTLSForSentinelMode: true } : {}),
        ...(retry ? { sentinelRetryStrategy: retry } : {}),
        // Reconnect as soon as a sentinel announces +switch-master: until the sentinels turn
        // the old master into a replica (seconds later) it still accepts writes, and a job
        // added there then is flushed with its data. READONLY alone notices only after that.
        failoverDetector: true,
        reconnectOnError: reconnectOnReadonly,
      });
    case 'cluster': {
      // ioredis gives node connections no retry of their own: the Cluster reconnects as a whole.
      const { retryStrategy: _ignored, ...nodeOptions } = withRetry;
      const clusterOptions: ClusterOptions = {
        redisOptions: {
          ...nodeOptions,
          ...(target.username ? { username: target.username } : {}),
          ...(target.password ? { password: target.password } : {}),
          ...(target.tls ? { tls: {} } : {}),
          reconnectOnError: reconnectOnReadonly,
        },
        enableReadyCheck: redis.enableReadyCheck ?? true,
        lazyConnect: redis.lazyConnect ?? false,
        enableOfflineQueue: redis.enableOfflineQueue ?? true,
        ...(retry ? { clusterRetryStrategy: (times: number) => retry(times) } : {}),
        // A failover moves slots: ask again soon rather than fail the command.
        retryDelayOnFailover: 200,
        retryDelayOnClusterDown: 200,
        retryDelayOnTryAgain: 200,
        slotsRefreshTimeout: 2_000,
        // TLS: connect by the names the nodes announce, so certificates for those names verify
        // (ioredis's advice for managed clusters such as ElastiCache).
        ...(target.tls ? { dnsLookup: (address: string, callback: (error: Error | null, address: string) => void) => callback(null, address) } : {}),
      };
      return new Cluster(target.nodes, clusterOptions);
    }
  }
}

export function isCluster(client: RedisClient): client is Cluster {
  return (client as { isCluster?: boolean }).isCluster === true;
}

/** The masters a client writes to: one for a single server or Sentinel, every master of a Cluster. */
export function masters(client: RedisClient): Redis[] {
  return isCluster(client) ? client.nodes('master') : [client];
}
