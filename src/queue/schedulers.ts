import type { Queue } from 'bullmq';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { defaultJobOptions } from './job-options.ts';

/** The scheduled syncs and the cron line each one takes from the configuration. */
export function scheduleTable(config: Config): Array<{ job: string; pattern: string }> {
  return [
    { job: 'sync-courses', pattern: config.TRAINSYNC_CRON_COURSES },
    { job: 'sync-filters', pattern: config.TRAINSYNC_CRON_FILTERS },
    { job: 'sync-results', pattern: config.TRAINSYNC_CRON_RESULTS },
    { job: 'sync-users', pattern: config.TRAINSYNC_CRON_USERS },
    { job: 'sync-seats', pattern: config.TRAINSYNC_CRON_SEATS },
  ];
}

/**
 * Upserts one job scheduler per sync. Scheduler ids are fixed, so any number of
 * workers registering at once leave one scheduler each, and each tick makes one job.
 */
export async function registerSchedulers(queue: Queue, config: Config, log: Logger): Promise<void> {
  for (const { job, pattern } of scheduleTable(config)) {
    await queue.upsertJobScheduler(job, { pattern, tz: 'UTC' }, { name: job, data: { trigger: 'schedule' }, opts: defaultJobOptions(config) });
    log.info({ job, pattern }, 'schedule registered');
  }
}
