import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { defaultJobOptions } from './job-options.ts';
import type { JobQueue } from './job-queue.ts';
import { JOB_NAMES, PROVISION_QUEUE, SYNC_QUEUE, type JobName, type QueueName } from './names.ts';

/** The queue a scheduled job runs on: the syncs on `sync`, the drift repair on `provision`. */
function scheduleQueue(job: JobName): QueueName {
  return job === JOB_NAMES.reconcileFix ? PROVISION_QUEUE : SYNC_QUEUE;
}

/** The scheduled jobs and the cron line each one takes from the configuration (reconcile-fix only when set). */
export function scheduleTable(config: Config): Array<{ job: JobName; pattern: string }> {
  const optional = config.TRAINSYNC_CRON_RECONCILE_FIX === undefined ? [] : [{ job: JOB_NAMES.reconcileFix, pattern: config.TRAINSYNC_CRON_RECONCILE_FIX }];
  return [
    { job: JOB_NAMES.syncCourses, pattern: config.TRAINSYNC_CRON_COURSES },
    { job: JOB_NAMES.syncFilters, pattern: config.TRAINSYNC_CRON_FILTERS },
    { job: JOB_NAMES.syncGroups, pattern: config.TRAINSYNC_CRON_GROUPS },
    { job: JOB_NAMES.syncResults, pattern: config.TRAINSYNC_CRON_RESULTS },
    { job: JOB_NAMES.syncUsers, pattern: config.TRAINSYNC_CRON_USERS },
    { job: JOB_NAMES.syncSeats, pattern: config.TRAINSYNC_CRON_SEATS },
    ...optional,
  ];
}

/**
 * Upserts one job scheduler per sync. Scheduler ids are fixed, so any number of
 * workers registering at once leave one scheduler each, and each tick makes one job.
 */
export async function registerSchedulers(queue: JobQueue, config: Config, log: Logger): Promise<void> {
  for (const { job, pattern } of scheduleTable(config)) {
    await queue.queues[scheduleQueue(job)].upsertJobScheduler(job, { pattern, tz: 'UTC' }, { name: job, data: { trigger: 'schedule' }, opts: defaultJobOptions(config) });
    log.info({ job, pattern }, 'schedule registered');
  }
  // A schedule switched off (TRAINSYNC_CRON_RECONCILE_FIX emptied) must not keep firing from Redis.
  if (config.TRAINSYNC_CRON_RECONCILE_FIX === undefined) await queue.queues[PROVISION_QUEUE].removeJobScheduler(JOB_NAMES.reconcileFix);
}

/**
 * Registers again the schedules Redis no longer has (an emptied or failed-over Redis
 * loses them, and nothing else would bring them back before the worker restarts).
 * Returns how many were missing.
 */
export async function ensureSchedulers(queue: JobQueue, config: Config, log: Logger): Promise<number> {
  const present = new Set<string>();
  for (const name of [SYNC_QUEUE, PROVISION_QUEUE] as const) {
    for (const scheduler of await queue.queues[name].getJobSchedulers()) present.add(scheduler.key);
  }
  const missing = scheduleTable(config).filter(({ job }) => !present.has(job));
  if (missing.length === 0) return 0;
  for (const { job, pattern } of missing) {
    await queue.queues[scheduleQueue(job)].upsertJobScheduler(job, { pattern, tz: 'UTC' }, { name: job, data: { trigger: 'schedule' }, opts: defaultJobOptions(config) });
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
