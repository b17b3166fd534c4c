import { Redis } from 'ioredis';

/**
 * Deletes a bench run's Redis keys: every queue and budget key names its random prefix
 * (inside a hash tag on a Cluster). A URL this client cannot open (Sentinel, Cluster)
 * leaves them, under a prefix no one else uses.
 */
export async function deleteBenchKeys(redisUrl: string, prefix: string): Promise<void> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    for await (const keys of redis.scanStream({ match: `*${prefix}*`, count: 1000 }) as AsyncIterable<string[]>) if (keys.length > 0) await redis.del(...keys);
  } catch {
    // See above: the keys stay.
  } finally {
    redis.disconnect();
  }
}
