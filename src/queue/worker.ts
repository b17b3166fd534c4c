import { Worker } from 'bullmq';
import type { Config } from '../config.ts';
import { createRedisConnection } from './connection.ts';
import type { QueueName } from './names.ts';
import { runJob, type JobRunner } from './run-job.ts';

export interface WorkerHandle {
  workers: Worker[];
  /** Aborts running jobs (they checkpoint), waits up to the shutdown timeout, then forces. */
  close(): Promise<void>;
}

/** Starts one BullMQ worker per queue with the configured concurrency. */
export async function startWorkers(config: Config, runner: JobRunner, queues: readonly QueueName[]): Promise<WorkerHandle> {
  const { log } = runner;
  // Shared with the jobs' context: aborting it stops every running job at its next page.
  const abort = new AbortController();
  // BullMQ never closes a connection it was given: close() below disconnects these.
  const connections = queues.map(() => createRedisConnection(config.REDIS_URL));
  const workers = queues.map((queueName, i) => {
    const worker = new Worker(queueName, (job, token) => runJob(job, token, runner, abort.signal), {
      connection: connections[i]!,
      prefix: config.TRAINSYNC_QUEUE_PREFIX,
      concurrency: config.TRAINSYNC_WORKER_CONCURRENCY,
      // A lock outlives slow pages; a crashed worker's job is picked up again after it.
      lockDuration: config.TRAINSYNC_JOB_LOCK_MS,
      stalledInterval: config.TRAINSYNC_STALLED_INTERVAL_MS,
      maxStalledCount: 3,
      autorun: true,
    });
    worker.on('failed', (job, error) => {
      if (error?.name === 'DelayedError') return;
      log.warn({ job: job?.name, jobId: job?.id, attemptsMade: job?.attemptsMade, reason: error?.message }, 'job attempt failed');
    });
    worker.on('error', (error) => log.error({ err: error, queue: queueName }, 'worker error'));
    return worker;
  });
  await Promise.all(workers.map((worker) => worker.waitUntilReady()));
  log.info({ queues, concurrency: config.TRAINSYNC_WORKER_CONCURRENCY }, 'worker started');

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      abort.abort();
      const graceful = Promise.all(workers.map((worker) => worker.close())).then(() => true);
      const timeout = new Promise<boolean>((resolve) => setTimeout(resolve, config.TRAINSYNC_SHUTDOWN_TIMEOUT_MS, false).unref());
      if (!(await Promise.race([graceful, timeout]))) {
        log.warn({ timeoutMs: config.TRAINSYNC_SHUTDOWN_TIMEOUT_MS }, 'jobs did not stop in time; forcing close (their locks expire and another worker resumes them)');
        await Promise.all(workers.map((worker) => worker.close(true)));
      }
      for (const connection of connections) connection.disconnect();
      log.info('worker stopped');
    })();
    return closing;
  };
  return { workers, close };
}
