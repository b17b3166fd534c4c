import { TrainsyncError } from '../lib/errors.ts';
import type { Logger } from '../runtime/log.ts';
import type { JobQueue } from '../queue/job-queue.ts';
import { SYNC_QUEUE } from '../queue/names.ts';
import { processAndWait } from '../queue/process-and-wait.ts';
import type { JobOutcome } from '../queue/wait-for-jobs.ts';
import { syncJobOf, type SyncResource } from './catalog-resources.ts';
import { syncPayloadSchema, type SyncPayload } from './sync-payload.ts';

export interface RunSyncDeps {
  /** The organisation to sync. */
  org: string;
  queue: JobQueue;
  log: Logger;
  /** Records the runs of an orphaned job (of organisation `org`) removed to make way for this request (other options) as cancelled. */
  cancelRuns?: (org: string, jobId: string, reason: string) => Promise<unknown>;
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

/** The wait was interrupted (Ctrl-C); the message says where each job is now (see describeInterruption). */
export class SyncInterruptedError extends TrainsyncError {
  constructor(message = 'interrupted: the jobs this process was running went back to the queue; the next `trainsync sync` or a worker resumes them from their checkpoints') {
    super(message, { code: 'INTERRUPTED', retryable: true });
    this.name = 'SyncInterruptedError';
  }
}

/** Where a job is once this process has stopped waiting and handed back what it ran. */
export type InterruptedJobState = 'completed' | 'failed' | 'active' | 'queued' | 'unknown';

/**
 * The last line after Ctrl-C: what actually happened to each job, read from the queue after
 * this process let go of its own. A job another worker runs goes on there (it did not go back
 * to the queue); one this process ran went back and resumes from its checkpoint; one that
 * finished before the Ctrl-C is said to have finished.
 */
export function describeInterruption(jobs: ReadonlyArray<{ label: string; state: InterruptedJobState }>): string {
  const of = (state: InterruptedJobState): string[] => jobs.filter((j) => j.state === state).map((j) => j.label);
  const list = (names: string[]): string => names.join(', ');
  const parts = [
    of('completed').length > 0 ? `${list(of('completed'))} finished` : '',
    of('failed').length > 0 ? `${list(of('failed'))} failed (see \`trainsync status\`)` : '',
    of('active').length > 0 ? `${list(of('active'))} still running on a worker, which finishes ${of('active').length === 1 ? 'it' : 'them'}` : '',
    of('queued').length > 0 ? `${list(of('queued'))} back in the queue: the next \`trainsync sync\` or a worker resumes ${of('queued').length === 1 ? 'it' : 'them'} from ${of('queued').length === 1 ? 'its checkpoint' : 'their checkpoints'}` : '',
    of('unknown').length > 0 ? `${list(of('unknown'))} not found in the queue (see \`trainsync status\`)` : '',
  ].filter(Boolean);
  return `interrupted: stopped waiting; ${parts.join('; ')}`;
}

const interruptedState = (state: string): InterruptedJobState =>
  state === 'completed' || state === 'failed' || state === 'active' ? state : state === 'waiting' || state === 'delayed' || state === 'prioritized' || state === 'waiting-children' ? 'queued' : 'unknown';

/** What makes two sync requests different (the trigger does not). */
function optionsOf(data: unknown): string {
  const parsed = syncPayloadSchema.safeParse(data);
  if (!parsed.success) return 'unreadable options';
  const { since, until, full } = parsed.data;
  const words = [since ? `--since ${since}` : '', until ? `--until ${until}` : '', full ? '--full' : ''].filter(Boolean);
  return words.length > 0 ? words.join(' ') : 'no options';
}

/** A sync job's outcome, with the organisation it synced. */
export type SyncOutcome = JobOutcome & { org: string };

/**
 * Enqueues one sync job per resource and waits for all of them. A job already queued
 * or running for a resource with the same options is joined instead of doubled
 * (deduplication by job name); one with other options is never silently merged: the
 * request is refused before anything is enqueued. When no worker is connected this
 * process runs the jobs itself.
 */
export async function runSync(deps: RunSyncDeps, resources: readonly SyncResource[], payload: SyncPayload, options: RunSyncOptions = {}): Promise<JobOutcome[]> {
  const { org, ...rest } = deps;
  const outcomes = await runSyncOfOrgs({ ...rest, orgs: [org] }, resources, payload, options);
  return outcomes.map(({ org: _org, ...outcome }) => outcome);
}

/**
 * `runSync` for several organisations at once: every organisation's requests are checked
 * first (a conflict in one refuses them all before anything is enqueued), then every job
 * is enqueued and all are waited for together, so the organisations' jobs run side by side
 * (each on its own key and request budget) and one process working the queue serves them
 * all. Outcomes come in organisation order, then resource order.
 */
export async function runSyncOfOrgs(
  deps: Omit<RunSyncDeps, 'org'> & { orgs: readonly string[] },
  resources: readonly SyncResource[],
  payload: SyncPayload,
  options: RunSyncOptions = {},
): Promise<SyncOutcome[]> {
  const planned = deps.orgs.flatMap((org) =>
    resources.map((resource) => {
      // The job's own payload schema keeps what its resource takes (the date options only reach a windowed one).
      const job = syncJobOf(deps.queue.catalog.values(), resource);
      return { org, name: job.name, data: job.payload.parse(payload) };
    }),
  );
  const several = deps.orgs.length > 1;
  const label = (org: string, name: string): string => (several ? `${name} of ${org}` : name);
  for (const { org, name, data } of planned) {
    const running = await deps.queue.deduplicated(SYNC_QUEUE, name, org);
    if (running?.holder?.orphaned) {
      // Its process is gone (killed, or stopped before it handed the job back): nobody will
      // finish it, so this request takes over now rather than after the lock and stalled checks.
      if (optionsOf(running.data) === optionsOf(data)) {
        await deps.queue.takeOver(running);
        deps.log.warn({ org, job: name, jobId: running.id, worker: running.holder.worker }, 'took over an orphaned sync (its process is gone); it resumes from its checkpoints');
      } else {
        const reason = `cancelled: orphaned (worker ${running.holder.worker ?? 'unknown'} gone), replaced by a sync with ${optionsOf(data)}`;
        if (await deps.queue.cancel(running)) {
          await deps.cancelRuns?.(org, running.id, reason);
          deps.log.warn({ org, job: name, jobId: running.id, worker: running.holder.worker }, 'removed an orphaned sync with other options (its process is gone)');
        }
      }
      continue;
    }
    if (running && optionsOf(running.data) !== optionsOf(data)) {
      const where = running.holder?.worker ? ` on worker ${running.holder.worker}` : '';
      throw new SyncConflictError(
        `${label(org, name)} is already ${running.state === 'active' ? 'running' : running.state} (job ${running.id}${where}) with ${optionsOf(running.data)}; this request (${optionsOf(data)}) was not enqueued. ` +
          'Wait for that run to finish (`trainsync status`), or remove it with `trainsync cancel ' + running.id + '`.',
      );
    }
  }
  const jobs = [];
  for (const { org, name, data } of planned) {
    // waited: finished jobs are kept long enough to be read (a night of 1,000 organisations is 6,000 jobs; 1,000 kept lost some).
    const job = await deps.queue.add(name, data, { org, dedupeId: name, waited: true });
    if (job.data !== undefined && optionsOf(job.data) !== optionsOf(data)) {
      throw new SyncConflictError(`${label(org, name)} was enqueued by another process a moment ago with ${optionsOf(job.data)}; this request (${optionsOf(data)}) was not enqueued. Run it again when that one finishes.`);
    }
    deps.log.debug({ org, job: name, jobId: job.id }, 'sync enqueued (or joined the same one already queued)');
    jobs.push({ org, job });
  }
  let outcomes: JobOutcome[];
  try {
    outcomes = await processAndWait(deps.queue, SYNC_QUEUE, jobs.map(({ job }) => job.id), {
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      interrupted: () => new SyncInterruptedError(),
    });
  } catch (error) {
    if (!(error instanceof SyncInterruptedError)) throw error;
    // processAndWait has closed this process's own worker by now: what is active is another worker's.
    const states = await Promise.all(
      jobs.map(async ({ org, job }) => ({ label: label(org, job.name.replace(/^sync-/, '')), state: interruptedState(await deps.queue.state(SYNC_QUEUE, job.id).catch(() => 'unknown')) })),
    );
    throw new SyncInterruptedError(describeInterruption(states));
  }
  // In the order asked for, each under its job's name.
  return jobs.map(({ org, job }) => ({ ...outcomes.find((o) => o.jobId === job.id)!, name: job.name, org }));
}
