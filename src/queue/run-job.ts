import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import { z } from 'zod';
import type { JobContext, JobInfo, ProgressUpdate, Services } from './job-context.ts';
import { classify, errorMessage } from '../lib/errors.ts';
import { toInfrastructureError } from '../lib/infra-errors.ts';
import type { Logger } from 'pino';
import { tryAdvisoryLock } from '../warehouse/advisory-lock.ts';
import type { JobCatalog } from './catalog.ts';
import { watchLock } from './lock-watch.ts';
import { jobOrg, orgScoped } from './org-scope.ts';
import { POSTGRES_WAIT_FIRST_MS, postgresWaitOf } from './postgres-wait.ts';
import { ATTR } from '../lib/tracing/attributes.ts';
import { inSpan } from '../lib/tracing/spans.ts';

/** How long a job whose exclusive lock is taken waits before it is tried again. */
const LOCK_BUSY_RETRY_MS = 5_000;
/** Progress reaches Redis at most this often, the first time this long after the job starts: a page-by-page update would cost a round trip per page. */
const PROGRESS_INTERVAL_MS = 500;
/**
 * And, per job, at most once every this many ms times the jobs this process runs: about 20
 * updates a second per process whatever its concurrency. Each update is a BullMQ script and
 * an event every waiting `sync` reads; 250 jobs of 1,000 organisations at 500 ms each were
 * 500 a second per worker for lines nobody reads one by one. One to ten jobs keep 500 ms.
 */
const PROGRESS_SHARE_MS = 50;
/** Jobs this process is running (every queue): what spaces their progress updates. */
let runningJobs = 0;
/**
 * Permanent errors fail the job at once: a platform error that says so (documented 400
 * codes, 401), a configuration error, a record that fails validation (lib/errors.ts
 * classify). Anything else (network, database) is retried.
 */
export function isPermanentError(error: unknown): boolean {
  return !classify(error).retryable;
}

/**
 * How one attempt ended: `delayed` is back in the queue without spending an attempt
 * (shutdown, lock busy); `waiting-for-postgres` likewise, until Postgres answers again.
 */
export type AttemptOutcome = 'completed' | 'failed' | 'delayed' | 'waiting-for-postgres';

/** The message of the record each attempt ends with. */
export const JOB_FINISHED = 'job finished';

/**
 * The record of a job that failed for good: a command that waits for its jobs (sync,
 * provision) reports that failure itself, so on a terminal this record would say it twice.
 */
export function isFinalFailureRecord(fields: Readonly<Record<string, unknown>>, message: string | undefined): boolean {
  return message === JOB_FINISHED && fields.outcome === 'failed' && fields.retried === false;
}

/** `org`: the slug of the job's organisation (for the metrics' `org` label). */
export type JobFinishedHook = (name: string, outcome: AttemptOutcome, seconds: number, result: unknown, org: string) => void;

/** What runs jobs: the catalog, the services a job may use, and where it reports. */
export interface JobRunner {
  catalog: JobCatalog;
  /** Called when a job starts, for the job's organisation: built on first use, so commands that only enqueue need no platform key. */
  services(org: string): Services;
  log: Logger;
  onFinished?: JobFinishedHook;
}

/**
 * The fields of a job's summary worth a log line: the numbers and words its declared
 * summary schema names (never the whole value: it may be large).
 */
function summaryFields(value: unknown, schema: z.ZodType | undefined): Record<string, unknown> {
  if (!(schema instanceof z.ZodObject) || typeof value !== 'object' || value === null) return {};
  const record = value as Record<string, unknown>;
  return Object.fromEntries(
    Object.keys(schema.shape)
      .filter((key) => typeof record[key] === 'number' || typeof record[key] === 'string')
      .map((key) => [key, record[key]]),
  );
}

/** The payload's resource, when it names one (never the rest: payloads may carry secrets). */
function payloadResource(payload: unknown): Record<string, unknown> {
  if (typeof payload !== 'object' || payload === null) return {};
  const resource = (payload as Record<string, unknown>).resource;
  return typeof resource === 'string' ? { resource } : {};
}

/**
 * What BullMQ records as the job's failedReason is the thrown error's message: an error
 * without one (an AggregateError, `throw new Error()`, a thrown string) is thrown again as
 * an Error whose message says what it was, its cause the original.
 */
function withReason(error: unknown): unknown {
  if (error instanceof Error && error.message.trim() !== '') return error;
  return new Error(errorMessage(error), { cause: error });
}

/**
 * The BullMQ processor: parses the payload with the job's own schema, takes the job's
 * exclusive lock, runs it with a context of its own, and maps errors to BullMQ's
 * retry semantics: a permanent platform error fails at once; a shutdown, a busy lock
 * and a Postgres outage put the job back delayed without spending an attempt (it
 * resumes from its checkpoint); anything else is retried by BullMQ with backoff.
 * Logs one line when the attempt starts and one when it ends.
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
  const org = jobOrg(job.data);
  const log = runner.log.child({ job: job.name, jobId: job.id, org });
  const attempt = job.attemptsMade + 1;
  const startedAt = Date.now();
  const started = performance.now();
  log.info({ attempt, ...payloadResource(parsed.data) }, 'job started');

  const finish = (outcome: AttemptOutcome, fields: Record<string, unknown> = {}, result?: unknown): void => {
    const seconds = (performance.now() - started) / 1000;
    runner.onFinished?.(job.name, outcome, seconds, result, org);
    const line = { attempt, seconds: Math.round(seconds * 1000) / 1000, outcome, ...payloadResource(parsed.data), ...fields };
    if (outcome !== 'failed') log.info(line, JOB_FINISHED);
    else if (fields.retried === false) log.error(line, JOB_FINISHED);
    else log.warn(line, JOB_FINISHED);
  };
  /** Puts the job back in the delayed set; the error to throw so BullMQ leaves it there. */
  const putBack = async (delayMs: number, outcome: AttemptOutcome, fields: Record<string, unknown>): Promise<Error> => {
    try {
      await job.moveToDelayed(Date.now() + delayMs, token);
    } catch (error) {
      finish('failed', { ...fields, err: error, reason: `could not put the job back: ${errorMessage(error)}` });
      return error instanceof Error ? error : new Error(String(error));
    }
    finish(outcome, fields);
    return new DelayedError();
  };

  let services: Services;
  try {
    services = runner.services(org);
  } catch (error) {
    finish('failed', { err: error, retried: !isPermanentError(error) });
    throw isPermanentError(error) ? new UnrecoverableError(errorMessage(error)) : withReason(error);
  }
  const postgres = postgresWaitOf(runner, services.config);
  postgres.started(job);

  // The first update too waits an interval from the start: a job done sooner (most of a
  // night's: a snapshot of a few pages, a results read that finds nothing new) sends none, and
  // its outcome says the rest.
  let lastProgress = Date.now();
  const progress = (update: ProgressUpdate): void => {
    const now = Date.now();
    if (now - lastProgress < Math.max(PROGRESS_INTERVAL_MS, runningJobs * PROGRESS_SHARE_MS)) return;
    lastProgress = now;
    job.updateProgress({ ...update }).catch((error: unknown) => log.debug({ err: error }, 'progress update failed'));
  };
  const exclusiveKey = definition.exclusive?.(parsed.data as never);
  // Each organisation's jobs exclude only each other: one org's sync never waits for another's.
  const lockKey = exclusiveKey === undefined ? undefined : orgScoped(org, exclusiveKey);
  const lock = lockKey ? watchLock(signal) : undefined;
  const context: JobContext = { ...services, job: info, log, signal: lock?.signal ?? signal, progress };
  // Traces on: the job's own span, inside BullMQ's span of this attempt (nothing while off).
  const spanAttributes = { [ATTR.org]: org, [ATTR.job]: job.name, [ATTR.resource]: definition.resource, [ATTR.jobAttempt]: attempt };
  const run = (): Promise<unknown> => inSpan(`job ${job.name}`, spanAttributes, () => definition.run(parsed.data as never, context));

  let result: unknown;
  let lockBusy = false;
  runningJobs += 1;
  try {
    if (!lockKey || !lock) {
      result = await run();
    } else {
      const locked = await tryAdvisoryLock(services.locks, lockKey, (held) => {
        lock.follow(held);
        return run();
      });
      if (locked.acquired) result = locked.value;
      else lockBusy = true;
    }
  } catch (error) {
    if (error instanceof DelayedError) {
      // The job put itself back in the queue.
      finish('delayed');
      throw error;
    }
    if (signal.aborted) {
      // Shutting down: the job checkpointed what it finished; put it back for the next worker.
      throw await putBack(0, 'delayed', { reason: 'stopped for shutdown; the job goes back to the queue and resumes from its checkpoint' });
    }
    let infrastructure = toInfrastructureError(error, services.config);
    // Stopped because the lock's connection died: that failure is the reason, not the stop.
    if (infrastructure?.service !== 'postgres' && lock?.lost !== undefined) infrastructure = toInfrastructureError(lock.lost, services.config, 'postgres');
    if (infrastructure?.service === 'postgres') {
      // An outage is not the job's fault: it waits without spending an attempt, and resumes from its checkpoint.
      const delayMs = postgres.failed(infrastructure, startedAt, services.scope.lend);
      const delayed = await putBack(delayMs, 'waiting-for-postgres', { retryInSeconds: delayMs / 1000, reason: infrastructure.message });
      if (delayed instanceof DelayedError) postgres.parked(job);
      throw delayed;
    }
    if (lock?.lost !== undefined) {
      throw await putBack(POSTGRES_WAIT_FIRST_MS, 'delayed', { reason: `lost the connection holding its lock (${errorMessage(lock.lost)}); trying again shortly` });
    }
    if (error instanceof UnrecoverableError) {
      finish('failed', { err: error, retried: false });
      throw error.message.trim() === '' ? new UnrecoverableError(errorMessage(error.cause ?? error)) : error;
    }
    if (isPermanentError(error)) {
      finish('failed', { err: error, retried: false });
      throw new UnrecoverableError(errorMessage(error));
    }
    const retried = attempt < (job.opts.attempts ?? 1);
    finish('failed', { err: error, retried, reason: retried ? 'BullMQ retries it with backoff' : 'no attempts left' });
    throw withReason(error);
  } finally {
    runningJobs -= 1;
    lock?.release();
  }
  if (lockBusy) throw await putBack(LOCK_BUSY_RETRY_MS, 'delayed', { lockKey, reason: 'another worker is running this job; trying again shortly' });
  finish('completed', summaryFields(result, definition.summary), result);
  return result;
}
