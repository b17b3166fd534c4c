import type { App } from '../app.ts';
import { observeJobs } from '../metrics.ts';
import type { QueueName } from './names.ts';
import type { JobRegistry } from './registry.ts';
import type { RunJobDeps } from './run-job.ts';
import { startWorkers, type WorkerHandle } from './worker.ts';

/** What the processor needs from an app: the same for the worker command and the CLI's own worker. */
export function jobDepsFor(app: App, registry: JobRegistry): Omit<RunJobDeps, 'signal'> {
  return {
    registry,
    pool: app.pool,
    log: app.log,
    base: { config: app.config, db: app.db, pool: app.pool, platform: app.platform() },
    onFinished: observeJobs(app.metrics),
  };
}

/** Starts workers on the given queues of an app. */
export function startAppWorkers(app: App, registry: JobRegistry, queues: readonly QueueName[]): Promise<WorkerHandle> {
  return startWorkers({ config: app.config, log: app.log, queues, abort: new AbortController(), deps: jobDepsFor(app, registry) });
}

/**
 * The CLI's worker rule: when no worker process is connected to the queue, the
 * command processes its own jobs, so `trainsync sync` works without a running worker.
 * Returns undefined when a worker is connected (it will take the jobs).
 */
export async function startWorkerIfNoneConnected(app: App, queue: QueueName, registry: JobRegistry): Promise<WorkerHandle | undefined> {
  const connected = await app.queues[queue].getWorkersCount();
  if (connected > 0) {
    app.log.info({ queue, workers: connected }, 'a worker is connected; it will process the jobs');
    return undefined;
  }
  app.log.info({ queue }, 'no worker is connected; processing the jobs in this process');
  return startAppWorkers(app, registry, [queue]);
}
