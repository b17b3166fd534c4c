import os from 'node:os';
import { Worker, type Telemetry } from 'bullmq';
import type { Config } from '../config.ts';
import { describeRedisError } from '../lib/infra-errors.ts';
import type { RedisConnections } from './connection.ts';
import { PROVISION_QUEUE, type QueueName } from './names.ts';
import { runJob, type JobRunner } from './run-job.ts';
import { workerSettingsKey } from './keys.ts';
import { publishedFields, WORKER_SETTINGS_REFRESH_MS, WORKER_SETTINGS_TTL_SECONDS } from './worker-settings.ts';

export interface WorkerHandle {
  workers: Worker[];
  /**
   * Aborts running jobs (they checkpoint), waits up to the shutdown timeout, then forces;
   * `forced` says a job did not stop (it may still hold a pooled connection).
   */
  close(): Promise<{ forced: boolean }>;
}

/**
 * This process as a BullMQ worker name: a job records it as `processedBy` when it
 * becomes active, so a waiting `sync` can say which worker holds its job.
 */
export const WORKER_NAME = `${os.hostname()}:${process.pid}`;

/**
 * Starts one BullMQ worker per queue with the configured concurrency (the provision
 * queue's own: its jobs mostly wait for the request budget). Workers duplicate
 * `redis.primary` for their own connections (BullMQ closes those); the copies report to
 * `redis`, so a Redis outage is logged once when it starts and once when it ends, and
 * the Workers' connection errors meanwhile are not logged one by one.
 */
export async function startWorkers(config: Config, runner: JobRunner, queues: readonly QueueName[], redis: RedisConnections, telemetry?: Telemetry): Promise<WorkerHandle> {
  const { log } = runner;
  // Shared with the jobs' context: aborting it stops every running job at its next page.
  const abort = new AbortController();
  let closing = false;
  const workers = queues.map((queueName) => {
    const worker = new Worker(queueName, (job, token) => runJob(job, token, runner, abort.signal), {
      connection: redis.primary,
      prefix: config.TRAINSYNC_QUEUE_PREFIX,
      name: WORKER_NAME,
      concurrency: queueName === PROVISION_QUEUE ? config.TRAINSYNC_PROVISION_CONCURRENCY : config.TRAINSYNC_WORKER_CONCURRENCY,
      // A lock outlives slow pages; a crashed worker's job is picked up again after it.
      lockDuration: config.TRAINSYNC_JOB_LOCK_MS,
      stalledInterval: config.TRAINSYNC_STALLED_INTERVAL_MS,
      maxStalledCount: 3,
      autorun: true,
      // Traces on: each attempt is a span of the trace its job was added in (src/lib/tracing).
      ...(telemetry ? { telemetry } : {}),
    });
    worker.on('failed', (job, error) => {
      if (error?.name === 'DelayedError') return;
      // runJob has logged an attempt it ran ('job finished'); only BullMQ's own verdicts
      // (a job stalled too often: its workers kept dying) are news here.
      const level = /stalled/i.test(error?.message ?? '') ? 'warn' : 'debug';
      log[level]({ job: job?.name, jobId: job?.id, attemptsMade: job?.attemptsMade, reason: error?.message }, 'job attempt failed');
    });
    worker.on('error', (error) => {
      // Closing connections report "Connection is closed"; an outage is logged by `redis`, once.
      if (closing && describeRedisError(error, config.REDIS_URL) !== undefined) return;
      if (!redis.failed(error)) log.error({ err: error, queue: queueName }, 'worker error');
    });
    return worker;
  });
  await Promise.all(workers.map((worker) => worker.waitUntilReady()));
  // What this process runs jobs with, for the commands whose jobs it runs: refreshed while it runs, and kept
  // a day after (a command may read it after the worker stopped; a new process has a new name).
  const settingsKey = workerSettingsKey(config.TRAINSYNC_QUEUE_PREFIX, WORKER_NAME);
  const publish = (): void => {
    const fields = publishedFields(config);
    if (Object.keys(fields).length === 0) return;
    redis.primary
      .multi()
      .hset(settingsKey, fields)
      .expire(settingsKey, WORKER_SETTINGS_TTL_SECONDS)
      .exec()
      .catch((error: unknown) => log.debug({ err: error }, 'could not publish the worker settings'));
  };
  publish();
  const republish = setInterval(publish, WORKER_SETTINGS_REFRESH_MS).unref();
  log.info({ queues, concurrency: config.TRAINSYNC_WORKER_CONCURRENCY, provisionConcurrency: config.TRAINSYNC_PROVISION_CONCURRENCY, worker: WORKER_NAME }, 'worker started');

  let stopping: Promise<{ forced: boolean }> | undefined;
  const close = (): Promise<{ forced: boolean }> => {
    stopping ??= (async () => {
      closing = true;
      clearInterval(republish);
      abort.abort();
      const graceful = Promise.all(workers.map((worker) => worker.close())).then(() => true);
      const timeout = new Promise<boolean>((resolve) => setTimeout(resolve, config.TRAINSYNC_SHUTDOWN_TIMEOUT_MS, false).unref());
      const forced = !(await Promise.race([graceful, timeout]));
      if (forced) {
        log.warn({ timeoutMs: config.TRAINSYNC_SHUTDOWN_TIMEOUT_MS }, 'jobs did not stop in time; forcing close (their locks expire and another worker resumes them)');
        // Not awaited: after close(), BullMQ's close(true) returns that same pending close, which a
        // job stuck inside a statement holds forever (test/worker-forced-close.test.ts).
        void Promise.all(workers.map((worker) => worker.close(true))).catch(() => undefined);
      }
      log.info('worker stopped');
      return { forced };
    })();
    return stopping;
  };
  return { workers, close };
}
