import { createRedisClient, masters } from '../lib/redis-client.ts';

/** Redis's glob specials, escaped, so the prefix matches only itself. */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}

/**
 * Deletes every key under `prefix` (`PREFIX:…`: BullMQ's queues, the request budget's log
 * and pause) on every master, and returns how many. Only for a prefix one run made its own
 * (the demo's): a deployment's queues live under its TRAINSYNC_QUEUE_PREFIX.
 */
export async function deletePrefixKeys(redisUrl: string, prefix: string): Promise<number> {
  const client = createRedisClient(redisUrl, {
    redis: { lazyConnect: true, maxRetriesPerRequest: 1, disconnectTimeout: 200 },
    // One attempt: a failure is reported by the command that failed, not retried.
    retry: () => null,
  });
  // Without a listener ioredis prints each connection error; the rejected command says it.
  client.on('error', () => undefined);
  try {
    await client.connect();
    let deleted = 0;
    for (const node of masters(client)) {
      for await (const keys of node.scanStream({ match: `${globEscape(prefix)}:*`, count: 1000 }) as AsyncIterable<string[]>) {
        if (keys.length > 0) deleted += await node.unlink(...keys);
      }
    }
    return deleted;
  } finally {
    client.disconnect();
  }
}
