import type { App } from '../app.ts';
import { startWorkerIfNoneConnected } from './in-process-worker.ts';
import { defaultJobOptions } from './job-options.ts';
import { SYNC_QUEUE } from './names.ts';
import type { JobRegistry } from './registry.ts';
import type { SyncPayload } from './sync-payload.ts';
import { waitForJobs, type JobOutcome } from './wait-for-jobs.ts';

export const SYNC_RESOURCES = ['courses', 'filters', 'users', 'results', 'seats'] as const;
export type SyncResource = (typeof SYNC_RESOURCES)[number];

/**
 * Enqueues one sync job per resource and waits for all of them. A job already queued
 * or running for a resource is joined instead of doubled (deduplication by job name),
 * and when no worker is connected this process runs the jobs itself.
 */
export async function runSync(
  app: App,
  registry: JobRegistry,
  resources: readonly SyncResource[],
  payload: SyncPayload,
  onProgress?: (jobId: string, progress: unknown) => void,
): Promise<JobOutcome[]> {
  const queue = app.queues[SYNC_QUEUE];
  const jobs = [];
  for (const resource of resources) {
    const name = `sync-${resource}`;
    const data: SyncPayload = resource === 'results' ? payload : { trigger: payload.trigger, full: false };
    const job = await queue.add(name, data, { ...defaultJobOptions(app.config), deduplication: { id: name } });
    if (JSON.stringify(job.data) !== JSON.stringify(data)) {
      app.log.warn({ job: name, jobId: job.id }, 'this sync is already queued or running with other options; waiting for that one instead');
    }
    jobs.push(job);
  }
  const worker = await startWorkerIfNoneConnected(app, SYNC_QUEUE, registry);
  try {
    return await waitForJobs(app.config, SYNC_QUEUE, jobs, onProgress);
  } finally {
    await worker?.close();
  }
}
