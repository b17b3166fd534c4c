import { TrainsyncError } from '../lib/errors.ts';
import type { Logger } from '../runtime/log.ts';
import type { JobQueue } from '../queue/job-queue.ts';
import { SYNC_QUEUE } from '../queue/names.ts';
import { processAndWait } from '../queue/process-and-wait.ts';
import type { JobOutcome } from '../queue/wait-for-jobs.ts';
import { syncJobName, type SyncResource } from './resources.ts';
import { syncPayloadSchema, type SyncPayload } from './sync-payload.ts';

export interface RunSyncDeps {
  /** The organisation to sync. */
  org: string;
  queue: JobQueue;
  log: Logger;
  /** Records the runs of an orphaned job removed to make way for this request (other options) as cancelled. */
  cancelRuns?: (jobId: string, reason: string) => Promise<unknown>;
}

export interface RunSyncOptions {
  onProgress?: (jobId: string, progress: unknown) => void;
  /** Aborting stops waiting; jobs this process was running go back to the queue and resume from their checkpoints. */
  signal?: AbortSignal;
}

/** A sync of a resource is already queued or running with other options: nothing was enqueued. */
export class SyncConflictError extends TrainsyncError {
  constructor(message: string) {
    super(message, { code: 'SYNC_CONFLICT', retryable: false });
    this.name = 'SyncConflictError';
  }
}

/** The wait was interrupted (Ctrl-C); the jobs were handed back to the queue. */
export class SyncInterruptedError extends TrainsyncError {
  constructor() {
    super('interrupted: the jobs this process was running went back to the queue; the next `trainsync sync` or a worker resumes them from their checkpoints', {
      code: 'INTERRUPTED',
      retryable: true,
    });
    this.name = 'SyncInterruptedError';
  }
}

/** What makes two sync requests different (the trigger does not). */
function optionsOf(data: unknown): string {
  const parsed = syncPayloadSchema.safeParse(data);
  if (!parsed.success) return 'unreadable options';
  const { since, until, full } = parsed.data;
  const words = [since ? `--since ${since}` : '', until ? `--until ${until}` : '', full ? '--full' : ''].filter(Boolean);
  return words.length > 0 ? words.join(' ') : 'no options';
}

/**
 * Enqueues one sync job per resource and waits for all of them. A job already queued
 * or running for a resource with the same options is joined instead of doubled
 * (deduplication by job name); one with other options is never silently merged: the
 * request is refused before anything is enqueued. When no worker is connected this
 * process runs the jobs itself.
 */
export async function runSync(deps: RunSyncDeps, resources: readonly SyncResource[], payload: SyncPayload, options: RunSyncOptions = {}): Promise<JobOutcome[]> {
  const planned = resources.map((resource) => {
    const data: SyncPayload = resource === 'results' ? payload : { trigger: payload.trigger, full: false };
    return { name: syncJobName(deps.queue.catalog.values(), resource), data };
  });
  for (const { name, data } of planned) {
    const running = await deps.queue.deduplicated(SYNC_QUEUE, name, deps.org);
    if (running?.holder?.orphaned) {
      // Its process is gone (killed, or stopped before it handed the job back): nobody will
      // finish it, so this request takes over now rather than after the lock and stalled checks.
      if (optionsOf(running.data) === optionsOf(data)) {
        await deps.queue.takeOver(running);
        deps.log.warn({ job: name, jobId: running.id, worker: running.holder.worker }, 'took over an orphaned sync (its process is gone); it resumes from its checkpoints');
      } else {
        const reason = `cancelled: orphaned (worker ${running.holder.worker ?? 'unknown'} gone), replaced by a sync with ${optionsOf(data)}`;
        if (await deps.queue.cancel(running)) {
          await deps.cancelRuns?.(running.id, reason);
          deps.log.warn({ job: name, jobId: running.id, worker: running.holder.worker }, 'removed an orphaned sync with other options (its process is gone)');
        }
      }
      continue;
    }
    if (running && optionsOf(running.data) !== optionsOf(data)) {
      const where = running.holder?.worker ? ` on worker ${running.holder.worker}` : '';
      throw new SyncConflictError(
        `${name} is already ${running.state === 'active' ? 'running' : running.state} (job ${running.id}${where}) with ${optionsOf(running.data)}; this request (${optionsOf(data)}) was not enqueued. ` +
          'Wait for that run to finish (`trainsync status`), or remove it with `trainsync cancel ' + running.id + '`.',
      );
    }
  }
  const jobs = [];
  for (const { name, data } of planned) {
    const job = await deps.queue.add(name, data, { org: deps.org, dedupeId: name });
    if (job.data !== undefined && optionsOf(job.data) !== optionsOf(data)) {
      throw new SyncConflictError(`${name} was enqueued by another process a moment ago with ${optionsOf(job.data)}; this request (${optionsOf(data)}) was not enqueued. Run it again when that one finishes.`);
    }
    deps.log.debug({ job: name, jobId: job.id }, 'sync enqueued (or joined the same one already queued)');
    jobs.push(job);
  }
  const outcomes = await processAndWait(deps.queue, SYNC_QUEUE, jobs.map((job) => job.id), {
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    interrupted: () => new SyncInterruptedError(),
  });
  // In the order asked for, each under its job's name.
  return jobs.map((job) => ({ ...outcomes.find((o) => o.jobId === job.id)!, name: job.name }));
}
