import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { defaultJobOptions } from './job-options.ts';
import type { JobQueue } from './job-queue.ts';
import { JOB_NAMES, SYNC_QUEUE, type JobName } from './names.ts';

/** The scheduled syncs and the cron line each one takes from the configuration. */
export function scheduleTable(config: Config): Array<{ job: JobName; pattern: string }> {
  return [
    { job: JOB_NAMES.syncCourses, pattern: config.TRAINSYNC_CRON_COURSES },
    { job: JOB_NAMES.syncFilters, pattern: config.TRAINSYNC_CRON_FILTERS },
    { job: JOB_NAMES.syncResults, pattern: config.TRAINSYNC_CRON_RESULTS },
    { job: JOB_NAMES.syncUsers, pattern: config.TRAINSYNC_CRON_USERS },
    { job: JOB_NAMES.syncSeats, pattern: config.TRAINSYNC_CRON_SEATS },
  ];
}

/**
 * Upserts one job scheduler per sync. Scheduler ids are fixed, so any number of
 * workers registering at once leave one scheduler each, and each tick makes one job.
 */
export async function registerSchedulers(queue: JobQueue, config: Config, log: Logger): Promise<void> {
  for (const { job, pattern } of scheduleTable(config)) {
    await queue.queues[SYNC_QUEUE].upsertJobScheduler(job, { pattern, tz: 'UTC' }, { name: job, data: { trigger: 'schedule' }, opts: defaultJobOptions(config) });
    log.info({ job, pattern }, 'schedule registered');
  }
}
