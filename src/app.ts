import { Queue } from 'bullmq';
import type { Kysely } from 'kysely';
import type { Pool } from 'pg';
import type { Config } from './config.ts';
import { requirePlatform } from './config.ts';
import type { Logger } from './log.ts';
import { createMetrics, type Metrics } from './metrics.ts';
import { createPlatformClient, platformClientOptionsFromConfig } from './platform/client.ts';
import type { PlatformClient } from './platform/types.ts';
import { createRedisConnection } from './queue/connection.ts';
import { QUEUE_NAMES, type QueueName } from './queue/names.ts';
import type { Database } from './warehouse/database.ts';
import { ensureDatabase } from './warehouse/ensure-database.ts';
import { migrate } from './warehouse/migrator.ts';
import { createDb, createPool } from './warehouse/pool.ts';

/** The long-lived parts one process shares between its commands and jobs. */
export interface App {
  config: Config;
  log: Logger;
  pool: Pool;
  db: Kysely<Database>;
  metrics: Metrics;
  queues: Record<QueueName, Queue>;
  /** Built on first use: `status` and `migrate` need no platform key. */
  platform(): PlatformClient;
  close(): Promise<void>;
}

export interface CreateAppOptions {
  /** Apply migrations first (under the migrator's advisory lock, so safe from many processes). */
  migrate?: boolean;
}

/** Composition root of one process: config in, connected parts out. */
export async function createApp(config: Config, log: Logger, options: CreateAppOptions = {}): Promise<App> {
  await ensureDatabase(config.DATABASE_URL, log);
  const pool = createPool(config.DATABASE_URL, { max: Math.max(10, config.TRAINSYNC_WORKER_CONCURRENCY + config.TRAINSYNC_RESULTS_CONCURRENCY + 4) });
  if (options.migrate) await migrate(pool, log);
  const db = createDb(pool);
  const connection = createRedisConnection(config.REDIS_URL);
  const queues = Object.fromEntries(
    QUEUE_NAMES.map((name) => [name, new Queue(name, { connection, prefix: config.TRAINSYNC_QUEUE_PREFIX })]),
  ) as Record<QueueName, Queue>;
  const metrics = createMetrics(async () =>
    Promise.all(
      QUEUE_NAMES.map(async (queue) => ({
        queue,
        counts: await queues[queue].getJobCounts('waiting', 'active', 'delayed', 'failed', 'completed', 'waiting-children'),
      })),
    ),
  );
  let platform: PlatformClient | undefined;
  return {
    config,
    log,
    pool,
    db,
    metrics,
    queues,
    platform() {
      if (!platform) {
        requirePlatform(config);
        platform = createPlatformClient(
          platformClientOptionsFromConfig(config, log, { onRequest: (event) => metrics.observeRequest(event) }),
        );
      }
      return platform;
    },
    async close() {
      await platform?.close();
      await Promise.all(QUEUE_NAMES.map((name) => queues[name].close()));
      connection.disconnect();
      await db.destroy();
    },
  };
}
