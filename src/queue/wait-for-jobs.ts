import { QueueEvents, type Job, type Queue } from 'bullmq';
import type { Config } from '../config.ts';
import type { Logger } from 'pino';
import type { RedisConnections } from './connection.ts';
import { jobLockKey, queueKeys } from './keys.ts';
import { SYNC_QUEUE } from './names.ts';

export interface JobOutcome {
  jobId: string;
  name: string;
  status: 'completed' | 'failed';
  result?: unknown;
  error?: string;
  /** The worker (host:pid) that ran the job's last attempt, when Redis still knew. */
  processedBy?: string;
}

export interface WaitOptions {
  onProgress?: (jobId: string, progress: unknown) => void;
  /**
   * One line when a job has made no progress for `stallNoticeMs`: its id, its state and
   * who holds it (or that nobody does). Again only when that explanation changes.
   */
  onStall?: (message: string) => void;
  /** How often each job's state is read (to notice a job that vanished, and to explain a stall); default 5 s. */
  checkEveryMs?: number;
  /** Default 30 s. */
  stallNoticeMs?: number;
}

export interface WaitDeps {
  config: Config;
  queue: Queue;
  redis: RedisConnections;
  log: Logger;
}

const CHECK_EVERY_MS = 5_000;
const STALL_NOTICE_MS = 30_000;
const CLOSE_TIMEOUT_MS = 2_000;

/** Why a job waited for is no longer in Redis at all. */
export function vanishedMessage(queue: string): string {
  return `the job vanished from the queue (Redis restarted empty or failed over?); run the ${queue === SYNC_QUEUE ? 'sync' : 'command'} again`;
}

interface Waiting {
  job: Job;
  resolve(outcome: JobOutcome): void;
  /** Last progress event or change of state. */
  lastActivity: number;
  state: string | undefined;
  lockMissingSince: number | undefined;
  noticed: string | undefined;
  settled: boolean;
  /** Redis did not know the job at the last check too (one miss may be a finished job trimmed before its event arrived). */
  unknownBefore: boolean;
}

/**
 * Waits until every job has completed or failed for good (retries included), reporting
 * progress events as they come. Besides the events, each job's state is read every few
 * seconds: a job Redis no longer knows (emptied, failed over) ends as failed instead of
 * being waited for forever, and a job that makes no progress is explained (`onStall`).
 * When this process gives up on Redis (one-shot commands, TRAINSYNC_REDIS_TIMEOUT_MS)
 * the wait rejects with the InfrastructureError naming REDIS_URL.
 */
export async function waitForJobs(deps: WaitDeps, jobs: readonly Job[], options: WaitOptions = {}): Promise<JobOutcome[]> {
  if (jobs.length === 0) return [];
  const { config, queue, redis, log } = deps;
  const checkEveryMs = options.checkEveryMs ?? CHECK_EVERY_MS;
  const stallNoticeMs = options.stallNoticeMs ?? STALL_NOTICE_MS;
  const waits = new Map<string, Waiting>();
  const started = Date.now();
  const outcomes = jobs.map(
    (job) =>
      new Promise<JobOutcome>((resolve) => {
        waits.set(String(job.id), { job, resolve, lastActivity: started, state: undefined, lockMissingSince: undefined, noticed: undefined, settled: false, unknownBefore: false });
      }),
  );
  const all = Promise.all(outcomes);
  const settle = (jobId: string, outcome: Omit<JobOutcome, 'jobId' | 'name'>): void => {
    const waiting = waits.get(jobId);
    if (!waiting) return;
    waits.delete(jobId);
    waiting.settled = true;
    waiting.resolve({ jobId, name: waiting.job.name, ...outcome });
  };

  let events: QueueEvents | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    // Read events from the stream's current end, not from '$' at the first XREAD: that
    // starts only after waitUntilReady, and a job finishing in between would never be
    // reported (the state check below would catch it, but only seconds later).
    const [last] = await redis.primary.xrevrange(queueKeys(config.TRAINSYNC_QUEUE_PREFIX, queue.name).events, '+', '-', 'COUNT', 1);
    // BullMQ duplicates the connection it is given for its blocking reads; the copy reports to `redis`.
    events = new QueueEvents(queue.name, { connection: redis.primary, prefix: config.TRAINSYNC_QUEUE_PREFIX, lastEventId: last?.[0] ?? '0-0' });
    events.on('error', (error) => {
      if (!redis.failed(error)) log.warn({ err: error }, 'queue events error');
    });
    // After Redis restarted empty, job ids start over: an event for a waited id may be another job's.
    const finished = (jobId: string, outcome: Omit<JobOutcome, 'jobId' | 'name'>): void => {
      const waiting = waits.get(jobId);
      if (!waiting) return;
      queue.getJob(jobId).then(
        (job) =>
          settle(
            jobId,
            job && !sameJob(job, waiting.job)
              ? { status: 'failed', error: vanishedMessage(queue.name) }
              : { ...outcome, ...(outcome.status === 'failed' ? { error: failureReason(outcome.error, job ?? waiting.job) } : {}), ...ranBy(job) },
          ),
        () => settle(jobId, outcome.status === 'failed' ? { ...outcome, error: failureReason(outcome.error, waiting.job) } : outcome),
      );
    };
    events.on('completed', ({ jobId, returnvalue }) => finished(jobId, { status: 'completed', result: returnvalue }));
    // An empty reason in the event is never passed on: the job's own record (or what is known of it) says why.
    events.on('failed', ({ jobId, failedReason }) => finished(jobId, { status: 'failed', error: failedReason }));
    events.on('progress', ({ jobId, data }) => {
      const waiting = waits.get(jobId);
      if (waiting) waiting.lastActivity = Date.now();
      options.onProgress?.(jobId, data);
    });
    await events.waitUntilReady();

    const inspectAll = async (): Promise<void> => {
      for (const [jobId, waiting] of [...waits]) await inspect(deps, jobId, waiting, settle, { onStall: options.onStall, stallNoticeMs });
    };
    // Jobs that finished before the events were read are settled here, the rest as events come or by the periodic check.
    for (;;) {
      const inspecting = inspectAll();
      // Abandoned when the events settle every job first (a command queued behind an outage answers late).
      inspecting.catch(() => undefined);
      await Promise.race([all, inspecting]);
      if (waits.size === 0) break;
      await Promise.race([all, new Promise((resolve) => (timer = setTimeout(resolve, checkEveryMs)))]);
      clearTimeout(timer);
      if (waits.size === 0) break;
    }
    return await all;
  } catch (error) {
    throw redis.isDown ? redis.unreachable(error) : error;
  } finally {
    clearTimeout(timer);
    if (events) await closeEvents(events);
  }
}

/** Closes the QueueEvents; an unreachable Redis never answers QUIT, so after a moment the connection is dropped. */
async function closeEvents(events: QueueEvents): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const closed = await Promise.race([
    events.close().then(() => true, () => true),
    new Promise<boolean>((resolve) => (timer = setTimeout(resolve, CLOSE_TIMEOUT_MS, false))),
  ]);
  clearTimeout(timer);
  if (!closed) await events.disconnect().catch(() => undefined);
}

/** Reads one job's state: settles it when it finished or vanished, explains it when it stalls. */
async function inspect(
  deps: WaitDeps,
  jobId: string,
  waiting: Waiting,
  settle: (jobId: string, outcome: Omit<JobOutcome, 'jobId' | 'name'>) => void,
  options: { onStall: ((message: string) => void) | undefined; stallNoticeMs: number },
): Promise<void> {
  const { queue } = deps;
  // The state first, then the job: a job read first, while active, and found completed by
  // the state read after it would settle with the active job's empty return value (a
  // completed sync with no summary, seen under heavy load). Completed and failed are final,
  // so a job read after them holds what they left.
  const known = await queue.getJobState(jobId);
  const job = await queue.getJob(jobId);
  const state = job ? known : 'unknown';
  if (waiting.settled) return;
  if (job && !sameJob(job, waiting.job)) {
    // Another job under the same id: Redis restarted empty and its id counter started over.
    settle(jobId, { status: 'failed', error: vanishedMessage(queue.name) });
    return;
  }
  if (!job || state === 'unknown') {
    if (waiting.unknownBefore) settle(jobId, { status: 'failed', error: vanishedMessage(queue.name) });
    waiting.unknownBefore = true;
    return;
  }
  waiting.unknownBefore = false;
  if (state === 'completed' || state === 'failed') {
    if (state === 'completed') settle(jobId, { status: 'completed', result: job.returnvalue, ...ranBy(job) });
    else settle(jobId, { status: 'failed', error: failureReason(job.failedReason, job), ...ranBy(job) });
    return;
  }
  const now = Date.now();
  if (state !== waiting.state) {
    waiting.state = state;
    waiting.lastActivity = now;
    waiting.lockMissingSince = undefined;
  }
  if (!options.onStall) return;
  const idleMs = now - waiting.lastActivity;
  if (idleMs < options.stallNoticeMs) return;
  const why = await explain(deps, jobId, waiting, state, now);
  if (why === waiting.noticed || waiting.settled) return;
  waiting.noticed = why;
  options.onStall(`still waiting for job ${jobId} (${waiting.job.name}): ${why}; no progress for ${Math.round(idleMs / 1000)} s`);
}

/**
 * Why a job failed, never empty: BullMQ's failedReason, else the first line of the last
 * stack it kept, else what is known of the job. A bare "failed" told nobody anything (a
 * job read while still active has no reason yet; an error thrown without a message
 * leaves an empty one).
 */
export function failureReason(reason: string | undefined, job: Pick<Job, 'id' | 'name' | 'attemptsMade'> & { stacktrace?: string[] | null }): string {
  if (reason !== undefined && reason.trim() !== '') return reason;
  const stack = job.stacktrace?.at(-1)?.split('\n')[0]?.trim();
  if (stack) return stack;
  return `job ${job.id} (${job.name}) failed after ${job.attemptsMade} attempt${job.attemptsMade === 1 ? '' : 's'} without a recorded reason; its worker's log (job finished, jobId ${job.id}) has the error`;
}

/** Who ran the job (BullMQ records the worker's name as it takes it), as an outcome's field. */
function ranBy(job: Job | undefined): { processedBy?: string } {
  return typeof job?.processedBy === 'string' && job.processedBy !== '' ? { processedBy: job.processedBy } : {};
}

/** The same job, not merely the same id (ids start over in an emptied Redis). */
function sameJob(found: Job, waited: Job): boolean {
  return found.name === waited.name && found.timestamp === waited.timestamp;
}

/** What a job that makes no progress is waiting for, in a person's words. */
async function explain(deps: WaitDeps, jobId: string, waiting: Waiting, state: string, now: number): Promise<string> {
  const { queue, redis, config } = deps;
  if (state === 'active') {
    const job = await queue.getJob(jobId);
    const holder = job?.processedBy ? `worker ${job.processedBy}` : 'a worker';
    const locked = (await redis.primary.exists(jobLockKey(config.TRAINSYNC_QUEUE_PREFIX, queue.name, jobId))) === 1;
    if (locked) {
      waiting.lockMissingSince = undefined;
      return `active on ${holder}, which holds its lock but reported no progress (a slow platform, or a lock wait on another sync of the resource)`;
    }
    waiting.lockMissingSince ??= now;
    const missingMs = now - waiting.lockMissingSince;
    if (missingMs > config.TRAINSYNC_STALLED_INTERVAL_MS) {
      return (
        `active, but no worker has held its lock for longer than the stalled-job check (TRAINSYNC_STALLED_INTERVAL_MS=${config.TRAINSYNC_STALLED_INTERVAL_MS}): ` +
        `no running worker looks after it (last taken by ${holder}); is \`trainsync worker\` running and reaching Redis?`
      );
    }
    return `active, but no worker holds its lock (last taken by ${holder}, which stopped or lost Redis); the stalled-job check hands it to another worker`;
  }
  if (state === 'waiting' || state === 'prioritized' || state === 'wait') {
    const workers = await queue.getWorkersCount();
    return workers === 0
      ? `${state}, and no worker is connected to queue "${queue.name}" (start \`trainsync worker\`)`
      : `${state}, behind other jobs of queue "${queue.name}"`;
  }
  if (state === 'delayed') {
    const job = await queue.getJob(jobId);
    const last = job?.failedReason ? ` (last attempt: ${job.failedReason})` : '';
    return `delayed: to be retried after a backoff${last}, or until another sync of the same resource finishes`;
  }
  if (state === 'waiting-children') return 'waiting for the jobs it depends on';
  return state;
}
