import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A BullMQ/limiter key prefix of this test's own, so parallel files never meet. */
export function testPrefix(): string {
  return `test-${randomUUID()}`;
}

/** Deletes every Redis key under the prefix (BullMQ's and the limiter's). */
export async function dropPrefix(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 3 });
  try {
    for (const pattern of [`${prefix}*`]) {
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) await redis.del(...keys);
      } while (cursor !== '0');
    }
  } finally {
    redis.disconnect();
  }
}
