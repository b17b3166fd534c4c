import type { Config } from '../config.ts';
import type { Logger } from '../runtime/log.ts';
import { defaultJobOptions } from './job-options.ts';
import type { JobQueue } from './job-queue.ts';
import { JOB_NAMES, SYNC_QUEUE, type JobName } from './names.ts';

/** The scheduled syncs and the cron line each one takes from the configuration. */
export function scheduleTable(config: Config): Array<{ job: JobName; pattern: string }> {
  return [
    { job: JOB_NAMES.syncCourses, pattern: config.TRAINSYNC_CRON_COURSES },
    { job: JOB_NAMES.syncFilters, pattern: config.TRAINSYNC_CRON_FILTERS },
    { job: JOB_NAMES.syncGroups, pattern: config.TRAINSYNC_CRON_GROUPS },
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

/**
 * Registers again the schedules Redis no longer has (an emptied or failed-over Redis
 * loses them, and nothing else would bring them back before the worker restarts).
 * Returns how many were missing.
 */
export async function ensureSchedulers(queue: JobQueue, config: Config, log: Logger): Promise<number> {
  const present = new Set((await queue.queues[SYNC_QUEUE].getJobSchedulers()).map((scheduler) => scheduler.key));
  const missing = scheduleTable(config).filter(({ job }) => !present.has(job));
  if (missing.length === 0) return 0;
  for (const { job, pattern } of missing) {
    await queue.queues[SYNC_QUEUE].upsertJobScheduler(job, { pattern, tz: 'UTC' }, { name: job, data: { trigger: 'schedule' }, opts: defaultJobOptions(config) });
  }
  log.warn({ schedules: missing.map(({ job }) => job) }, 'schedules were missing from Redis (emptied or failed over?); registered them again');
  return missing.length;
}

/**
 * Keeps the schedules in Redis: checks when Redis is back after a drop and every
 * TRAINSYNC_SCHEDULE_CHECK_MS. Returns a function that stops watching.
 */
export function watchSchedulers(queue: JobQueue, config: Config, log: Logger): () => void {
  let running: Promise<void> | undefined;
  const check = (): void => {
    // While Redis is down the check would only queue behind the outage; the reconnect runs it.
    if (running || queue.redis.isDown) return;
    running = ensureSchedulers(queue, config, log)
      .then(() => undefined)
      .catch((error: unknown) => log.warn({ err: error }, 'could not check the schedules in Redis; trying again later'))
      .finally(() => {
        running = undefined;
      });
  };
  const timer = setInterval(check, config.TRAINSYNC_SCHEDULE_CHECK_MS);
  timer.unref();
  const stopReconnect = queue.redis.onReconnect(check);
  return () => {
    clearInterval(timer);
    stopReconnect();
  };
}
