import type { Logger } from '../log.ts';
import type { JobQueue } from '../queue/job-queue.ts';
import { SYNC_QUEUE } from '../queue/names.ts';
import type { JobOutcome } from '../queue/wait-for-jobs.ts';
import { syncJobName, type SyncResource } from './resources.ts';
import type { SyncPayload } from './sync-payload.ts';

export interface RunSyncDeps {
  queue: JobQueue;
  log: Logger;
}

/**
 * Enqueues one sync job per resource and waits for all of them. A job already queued
 * or running for a resource is joined instead of doubled (deduplication by job name),
 * and when no worker is connected this process runs the jobs itself.
 */
export async function runSync(
  deps: RunSyncDeps,
  resources: readonly SyncResource[],
  payload: SyncPayload,
  onProgress?: (jobId: string, progress: unknown) => void,
): Promise<JobOutcome[]> {
  const jobs = [];
  for (const resource of resources) {
    const name = syncJobName(resource);
    const data: SyncPayload = resource === 'results' ? payload : { trigger: payload.trigger, full: false };
    const job = await deps.queue.add(name, data, { dedupeId: name });
    if (JSON.stringify(job.data) !== JSON.stringify(data)) {
      deps.log.warn({ job: name, jobId: job.id }, 'this sync is already queued or running with other options; waiting for that one instead');
    }
    jobs.push(job);
  }
  const worker = await deps.queue.processHereIfNoWorker(SYNC_QUEUE);
  try {
    const outcomes = await deps.queue.waitFor(SYNC_QUEUE, jobs.map((job) => job.id), onProgress);
    // In the order asked for, each under its job's name.
    return jobs.map((job) => ({ ...outcomes.find((o) => o.jobId === job.id)!, name: job.name }));
  } finally {
    await worker?.close();
  }
}
