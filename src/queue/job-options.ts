import type { JobsOptions } from 'bullmq';
import type { Config } from '../config.ts';

/** Attempts of a job that does not say (transient failures only; permanent ones fail at once). */
export const DEFAULT_ATTEMPTS = 5;

/**
 * Retention and retry defaults for every job: completed jobs are trimmed, failed ones
 * are kept (bounded) so `status` can show them and a person can inspect the reason.
 */
export function defaultJobOptions(config: Config, attempts = DEFAULT_ATTEMPTS): JobsOptions {
  return {
    attempts,
    backoff: { type: 'exponential', delay: 5_000 },
    removeOnComplete: { age: 7 * 24 * 3600, count: 1_000 },
    removeOnFail: { age: 30 * 24 * 3600, count: config.TRAINSYNC_FAILED_JOBS_KEPT },
  };
}

/**
 * Options of a job that a person waits for by id (provisioning actions): never longer
 * apart than TRAINSYNC_RETRY_MAX_DELAY_MS at the start, and enough finished jobs kept
 * that a large run's ids can still be looked up while it is waited for.
 */
export function waitedJobOptions(config: Config, attempts = DEFAULT_ATTEMPTS): JobsOptions {
  return {
    ...defaultJobOptions(config, attempts),
    backoff: { type: 'exponential', delay: Math.min(5_000, config.TRAINSYNC_RETRY_MAX_DELAY_MS) },
    removeOnComplete: { age: 7 * 24 * 3600, count: 20_000 },
  };
}
