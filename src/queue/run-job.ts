import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import type { Pool } from 'pg';
import { z } from 'zod';
import type { JobContext, ProgressUpdate } from '../context.ts';
import type { Logger } from '../log.ts';
import { ConfigError } from '../config.ts';
import type { JobInfo } from './define-job.ts';
import type { JobRegistry } from './registry.ts';

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

export interface RunJobDeps {
  registry: JobRegistry;
  pool: Pool;
  log: Logger;
  signal: AbortSignal;
  /** Everything of the context but what belongs to one job. */
  base: Omit<JobContext, 'log' | 'signal' | 'progress'>;
  onFinished?: (name: string, outcome: 'completed' | 'failed' | 'delayed', seconds: number, result?: unknown) => void;
}

/**
 * The BullMQ processor: parses the payload with the job's own schema, takes the job's
 * exclusive lock, runs it with a context of its own, and maps errors to BullMQ's
 * retry semantics (a permanent platform error fails at once; a shutdown puts the job
 * back without spending an attempt).
 */
export async function runJob(job: Job, token: string | undefined, deps: RunJobDeps): Promise<unknown> {
  const definition = deps.registry.get(job.name);
  if (!definition) {
    throw new UnrecoverableError(`No job named "${job.name}" is registered; known: ${[...deps.registry.keys()].join(', ')}`);
  }
  const parsed = definition.payload.safeParse(job.data);
  if (!parsed.success) {
    throw new UnrecoverableError(`Invalid payload for ${job.name}: ${z.prettifyError(parsed.error)}`);
  }
  const info: JobInfo = { id: String(job.id), name: job.name, attemptsMade: job.attemptsMade };
  const log = deps.log.child({ job: job.name, jobId: job.id });
  const started = performance.now();
  const elapsed = (): number => (performance.now() - started) / 1000;

  const lockKey = definition.exclusive?.(parsed.data as never);
  const lockClient = lockKey ? await deps.pool.connect() : undefined;
  try {
    if (lockClient && lockKey) {
      const { rows } = await lockClient.query<{ locked: boolean }>('select pg_try_advisory_lock(hashtext($1)) as locked', [lockKey]);
      if (!rows[0]?.locked) {
        log.info({ lockKey }, 'another worker is running this job; trying again shortly');
        await job.moveToDelayed(Date.now() + LOCK_BUSY_RETRY_MS, token);
        deps.onFinished?.(job.name, 'delayed', elapsed());
        throw new DelayedError();
      }
    }

    let lastProgress = 0;
    const progress = (update: ProgressUpdate): void => {
      const now = Date.now();
      if (now - lastProgress < PROGRESS_INTERVAL_MS) return;
      lastProgress = now;
      job.updateProgress({ ...update }).catch((error: unknown) => log.debug({ err: error }, 'progress update failed'));
    };

    const context = { ...deps.base, log, signal: deps.signal, progress, job: info };
    try {
      const summary = await definition.run(parsed.data as never, context);
      deps.onFinished?.(job.name, 'completed', elapsed(), summary);
      return summary;
    } catch (error) {
      if (deps.signal.aborted) {
        // Shutting down: the job checkpointed what it finished; put it back for the next worker.
        log.info('stopped for shutdown; the job goes back to the queue and resumes from its checkpoint');
        await job.moveToDelayed(Date.now(), token);
        deps.onFinished?.(job.name, 'delayed', elapsed());
        throw new DelayedError();
      }
      deps.onFinished?.(job.name, 'failed', elapsed());
      if (error instanceof DelayedError || error instanceof UnrecoverableError) throw error;
      if (isPermanentError(error)) {
        const message = error instanceof Error ? error.message : String(error);
        log.error({ err: error }, 'job failed permanently');
        throw new UnrecoverableError(message);
      }
      log.warn({ err: error, attempt: job.attemptsMade + 1 }, 'job failed; BullMQ retries it with backoff');
      throw error;
    }
  } finally {
    if (lockClient && lockKey) {
      await lockClient.query('select pg_advisory_unlock(hashtext($1))', [lockKey]).catch(() => undefined);
      lockClient.release();
    }
  }
}
