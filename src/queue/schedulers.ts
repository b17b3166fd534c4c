import type { Config } from '../config.ts';
import type { Logger } from 'pino';
import type { JobCatalog } from './catalog.ts';
import type { AnyJobDefinition } from './define-job.ts';
import type { JobQueue, ScheduledJob } from './job-queue.ts';
import { orgScoped } from './org-scope.ts';
import { spreadCronLine, spreadOffsetMinutes } from './schedule-spread.ts';

/** A schedule to register, with its line as written: the spread moves every fire alike, so the gaps between fires are the written line's. */
export type PlannedSchedule = ScheduledJob & { written: string };

/**
 * The jobs of the catalog that declare a schedule, once per organisation, each with the
 * cron line that organisation's configuration gives it (none when it is off).
 */
export function scheduleTable(catalog: JobCatalog, config: Pick<Config, 'orgs' | 'scheduleSpreadMinutes'>): PlannedSchedule[] {
  return config.orgs.flatMap((org) => {
    const offset = spreadOffsetMinutes(org.slug, config.scheduleSpreadMinutes);
    return [...catalog.values()].flatMap((definition) => {
      if (!definition.schedule) return [];
      const { setting } = definition.schedule;
      const written = org.cronLines[setting] ?? definition.schedule.default;
      if (written === null) return [];
      // A cron line the orgs file gives this organisation itself is kept as written.
      const pattern = org.ownCronSettings?.includes(setting) ? written : spreadCronLine(written, offset);
      return [{ id: orgScoped(org.slug, definition.name), org: org.slug, job: definition.name, queue: definition.queue, pattern, written }];
    });
  });
}

/** Schedulers of jobs whose schedule is off for an organisation (no default, variable unset or empty). */
function switchedOff(catalog: JobCatalog, config: Pick<Config, 'orgs'>): { id: string; definition: AnyJobDefinition }[] {
  return config.orgs.flatMap((org) =>
    [...catalog.values()]
      .filter((d) => d.schedule !== undefined && (org.cronLines[d.schedule.setting] ?? d.schedule.default) === null)
      .map((definition) => ({ id: orgScoped(org.slug, definition.name), definition })),
  );
}

/**
 * Upserts one job scheduler per scheduled job. Scheduler ids are fixed, so any number
 * of workers registering at once leave one scheduler each, and each tick makes one job.
 */
export async function registerSchedulers(queue: JobQueue, config: Config, log: Logger): Promise<void> {
  for (const scheduled of scheduleTable(queue.catalog, config)) {
    await queue.upsertSchedule(scheduled);
    log.info({ job: scheduled.job, org: scheduled.org, pattern: scheduled.pattern }, 'schedule registered');
  }
  // A schedule switched off (its variable emptied) must not keep firing from Redis.
  for (const { id, definition } of switchedOff(queue.catalog, config)) await queue.removeSchedule(id, definition.queue);
}

/**
 * Registers again the schedules Redis no longer has (an emptied or failed-over Redis
 * loses them, and nothing else would bring them back before the worker restarts).
 * Returns how many were missing.
 */
export async function ensureSchedulers(queue: JobQueue, config: Config, log: Logger): Promise<number> {
  const present = new Set((await queue.schedules()).map((schedule) => schedule.id));
  const missing = scheduleTable(queue.catalog, config).filter(({ id }) => !present.has(id));
  if (missing.length === 0) return 0;
  for (const scheduled of missing) await queue.upsertSchedule(scheduled);
  log.warn({ schedules: missing.map(({ id }) => id) }, 'schedules were missing from Redis (emptied or failed over?); registered them again');
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
