import type { JobsOptions } from 'bullmq';
import type { Config } from '../config.ts';

/**
 * Retention and retry defaults for every job: completed jobs are trimmed, failed ones
 * are kept (bounded) so `status` can show them and a person can inspect the reason.
 */
export function defaultJobOptions(config: Config, attempts = 5): JobsOptions {
  return {
    attempts,
    backoff: { type: 'exponential', delay: 5_000 },
    removeOnComplete: { age: 7 * 24 * 3600, count: 1_000 },
    removeOnFail: { age: 30 * 24 * 3600, count: config.TRAINSYNC_FAILED_JOBS_KEPT },
  };
}
