import { Redis } from 'ioredis';

/**
 * A Redis connection for BullMQ. Workers block on Redis, so BullMQ requires
 * `maxRetriesPerRequest: null`; queues and events use the same settings for one code path.
 */
export function createRedisConnection(redisUrl: string): Redis {
  return new Redis(redisUrl, { maxRetriesPerRequest: null, enableReadyCheck: true });
}
