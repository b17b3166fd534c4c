import { ownerUrlOf } from './db.ts';
import type { SimulatorOptions } from '../../src/simulator/index.ts';

/**
 * The Redis-outage scenario shared by test/fault-redis.test.ts and `npm run bench -- timings`:
 * slow pages read one window at a time, so a results sync is still running when Redis stops.
 */
export const OUTAGE_SIMULATOR: SimulatorOptions = {
  seed: 11,
  sizes: { results: 4_000, resultsFrom: '2024-01-01', resultsTo: '2024-12-31' },
  faults: { latencyMs: 60 },
};

/** The worker's and the commands' environment in that scenario. */
export function outageEnv(parts: { apiUrl: string; apiKey: string; databaseUrl: string; redisUrl: string; prefix: string }): Record<string, string> {
  return {
    TRAINSYNC_API_URL: parts.apiUrl,
    TRAINSYNC_API_KEY: parts.apiKey,
    DATABASE_URL: parts.databaseUrl,
    TRAINSYNC_OWNER_DATABASE_URL: ownerUrlOf(parts.databaseUrl),
    REDIS_URL: parts.redisUrl,
    TRAINSYNC_QUEUE_PREFIX: parts.prefix,
    TRAINSYNC_REQUESTS_PER_SECOND: '2000',
    TRAINSYNC_RETRY_MAX_DELAY_MS: '200',
    TRAINSYNC_RESULTS_CONCURRENCY: '1',
    TRAINSYNC_METRICS_PORT: '0',
    TRAINSYNC_SHUTDOWN_TIMEOUT_MS: '3000',
    LOG_LEVEL: 'info',
    LOG_FORMAT: 'json',
  };
}
