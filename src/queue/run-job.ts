import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import { z } from 'zod';
import type { JobContext, JobInfo, ProgressUpdate, Services } from '../context.ts';
import { ConfigError } from '../config.ts';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../log.ts';
import { tryAdvisoryLock } from '../warehouse/advisory-lock.ts';
import type { JobCatalog } from './catalog.ts';

/** How long a job whose exclusive lock is taken waits before it is tried again. */
const LOCK_BUSY_RETRY_MS = 5_000;
/** Progress reaches Redis at most this often: a page-by-page update would cost a round trip per page. */
const PROGRESS_INTERVAL_MS = 500;

/**
 * Permanent errors fail the job at once: a platform error that says so (documented 400
 * codes, 401) or a configuration error. Anything else (network, database) is retried.
 */
export function isPermanentError(error: unknown): boolean {
  if (error instanceof ConfigError) return true;
  return typeof error === 'object' && error !== null && 'retryable' in error && error.retryable === false;
}

export type JobFinishedHook = (name: string, outcome: 'completed' | 'failed' | 'delayed', seconds: number, result?: unknown) => void;

/** What runs jobs: the catalog, the services a job may use, and where it reports. */
export interface JobRunner {
  catalog: JobCatalog;
  /** Called when a job starts: built on first use, so commands that only enqueue need no platform key. */
  services(): Services;
  log: Logger;
  onFinished?: JobFinishedHook;
}

/**
 * The BullMQ processor: parses the payload with the job's own schema, takes the job's
 * exclusive lock, runs it with a context of its own, and maps errors to BullMQ's
 * retry semantics (a permanent platform error fails at once; a shutdown puts the job
 * back without spending an attempt).
 */
export async function runJob(job: Job, token: string | undefined, runner: JobRunner, signal: AbortSignal): Promise<unknown> {
  const definition = runner.catalog.get(job.name);
  if (!definition) {
    throw new UnrecoverableError(`No job named "${job.name}" is registered; known: ${[...runner.catalog.keys()].join(', ')}`);
  }
  const parsed = definition.payload.safeParse(job.data);
  if (!parsed.success) {
    throw new UnrecoverableError(`Invalid payload for ${job.name}: ${z.prettifyError(parsed.error)}`);
  }
  const info: JobInfo = { id: String(job.id), name: job.name, attemptsMade: job.attemptsMade };
  const log = runner.log.child({ job: job.name, jobId: job.id });
  const started = performance.now();
  const elapsed = (): number => (performance.now() - started) / 1000;
  const services = runner.services();

  let lastProgress = 0;
  const progress = (update: ProgressUpdate): void => {
    const now = Date.now();
    if (now - lastProgress < PROGRESS_INTERVAL_MS) return;
    lastProgress = now;
    job.updateProgress({ ...update }).catch((error: unknown) => log.debug({ err: error }, 'progress update failed'));
  };
  const context: JobContext = { ...services, job: info, log, signal, progress };

  const run = async (): Promise<unknown> => {
    try {
      const summary = await definition.run(parsed.data as never, context);
      runner.onFinished?.(job.name, 'completed', elapsed(), summary);
      return summary;
    } catch (error) {
      if (signal.aborted) {
        // Shutting down: the job checkpointed what it finished; put it back for the next worker.
        log.info('stopped for shutdown; the job goes back to the queue and resumes from its checkpoint');
        await job.moveToDelayed(Date.now(), token);
        runner.onFinished?.(job.name, 'delayed', elapsed());
        throw new DelayedError();
      }
      runner.onFinished?.(job.name, 'failed', elapsed());
      if (error instanceof DelayedError || error instanceof UnrecoverableError) throw error;
      if (isPermanentError(error)) {
        log.error({ err: error }, 'job failed permanently');
        throw new UnrecoverableError(errorMessage(error));
      }
      log.warn({ err: error, attempt: job.attemptsMade + 1 }, 'job failed; BullMQ retries it with backoff');
      throw error;
    }
  };

  const lockKey = definition.exclusive?.(parsed.data as never);
  if (!lockKey) return run();
  const locked = await tryAdvisoryLock(services.withPgClient, lockKey, run);
  if (locked.acquired) return locked.value;
  log.info({ lockKey }, 'another worker is running this job; trying again shortly');
  await job.moveToDelayed(Date.now() + LOCK_BUSY_RETRY_MS, token);
  runner.onFinished?.(job.name, 'delayed', elapsed());
  throw new DelayedError();
}
