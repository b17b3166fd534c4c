import { fairPriority, orgScoped } from './org-scope.ts';
import { Queue, type Job, type JobsOptions, type Telemetry } from 'bullmq';
import type { ActionQueue, AddJobOptions, ChainSpec, EnqueuedJob, JobState } from './action-queue.ts';
import type { Config } from '../config.ts';
import { lookupJob, type JobCatalog } from './catalog.ts';
import { RedisConnections, type RedisMode, type RedisStatus } from './connection.ts';
import { addChains, type ChainLink } from './flows.ts';
import { defaultJobOptions, waitedJobOptions } from './job-options.ts';
import { activeHolder, connectedWorkers, removeOrphanOrQueued, requeueOrphan, type ActiveHolder } from './orphans.ts';
import { QUEUE_NAMES, type QueueName } from './names.ts';
import type { JobRunner } from './run-job.ts';
import { failureReason, waitForJobs, type JobOutcome, type WaitOptions } from './wait-for-jobs.ts';
import { startWorkers, type WorkerHandle } from './worker.ts';
import { redisLockNotes } from './lock-notes.ts';
import { redisSecretStore } from './secret-store.ts';
import { parsePublished, type SettingsFingerprint } from './worker-settings.ts';
import { workerSettingsKey } from './keys.ts';

export type { AddJobOptions, ChainSpec, EnqueuedJob, JobState } from './action-queue.ts';

/** A job as `status`, `cancel` and `sync` look at it. */
export interface FoundJob {
  id: string;
  name: string;
  queue: QueueName;
  data: unknown;
  state: JobState;
  /** For an active job: whether its worker is gone, and which worker took it. */
  holder?: ActiveHolder;
}

/** The states `status` and /metrics count. */
const COUNTED_STATES = ['waiting', 'active', 'delayed', 'failed', 'completed', 'waiting-children'] as const;

/** A job that failed for good, as `status` lists it. */
export interface FailedJob {
  id: string;
  name: string;
  failedReason: string;
  attemptsMade: number;
  finishedAt: string | null;
}

/** A job that runs on a schedule (src/queue/schedulers.ts derives them from the catalog). */
export interface ScheduledJob {
  /** The scheduler's id in Redis: the job's name, prefixed by the organisation unless it is `default`. */
  id: string;
  /** The organisation its runs work for. */
  org: string;
  job: string;
  queue: QueueName;
  /** The cron line (UTC): the job's setting when set, else its default, moved by the organisation's spread. */
  pattern: string;
}

/** A job scheduler as Redis holds it. */
export interface ScheduleEntry {
  id: string;
  pattern: string | null;
  next: string | null;
}

/** How long close() waits for the queues before it drops the connection (an unreachable Redis never answers). */
const CLOSE_TIMEOUT_MS = 2_000;

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms).unref());

/**
 * The queue as domain code sees it: add jobs by name (the payload checked against the
 * catalog's schema), chain them, wait for them, and run them here when no worker is
 * connected. Everything BullMQ stays behind it.
 */
/** The queues of one process; what provisioning needs of it is `ActionQueue`. */
export interface JobQueue extends ActionQueue {
  /** The BullMQ queues: for src/queue and tests only; everything else goes through the methods below. */
  readonly queues: Readonly<Record<QueueName, Queue>>;
  /** The jobs this process knows (schedules and resources derive from it). */
  readonly catalog: JobCatalog;
  /** Redis as this process sees it: outage state, a quick PING, reconnects. */
  readonly redis: RedisStatus;
  /** The job a deduplication id points at while it is queued or running, if any (with its holder when active). */
  deduplicated(queue: QueueName, dedupeId: string, org: string): Promise<FoundJob | undefined>;
  /** A job by id, in whichever queue holds it. */
  find(jobId: string): Promise<FoundJob | undefined>;
  /** The jobs a worker has taken (active), each with its holder: running, or orphaned. */
  activeJobs(queue: QueueName, limit: number): Promise<FoundJob[]>;
  /** The names (host:pid) of the worker processes connected to the queue. */
  workerNames(queue: QueueName): Promise<string[]>;
  /** The settings a worker process published for an organisation (src/queue/worker-settings.ts); undefined when it published none. */
  workerSettings(workerName: string, org: string): Promise<SettingsFingerprint | undefined>;
  /** Puts an orphaned active job back in its queue under its own id: the next worker resumes it. */
  takeOver(job: FoundJob): Promise<void>;
  /** Removes a queued or orphaned job for good; false when it could not be (it is locked again). */
  cancel(job: FoundJob): Promise<boolean>;
  /**
   * The CLI's worker rule: when no worker process is connected to the queue, this
   * process works it until the returned handle is closed. Undefined when one is.
   */
  processHereIfNoWorker(queue: QueueName): Promise<WorkerHandle | undefined>;
  startWorkers(queues: readonly QueueName[]): Promise<WorkerHandle>;
  /** Jobs per state (waiting, active, delayed, failed, completed, waiting-children). */
  counts(queue: QueueName): Promise<Record<string, number>>;
  /** Worker processes connected to the queue. */
  workers(queue: QueueName): Promise<number>;
  /** The latest jobs that failed for good, newest first. */
  failedJobs(queue: QueueName, limit: number): Promise<FailedJob[]>;
  /** Registers (or updates) the job scheduler of a scheduled job; its id is the job's name. */
  upsertSchedule(scheduled: ScheduledJob): Promise<void>;
  /** Removes a scheduler by id (a schedule that is off); nothing when there is none. */
  removeSchedule(id: string, queue: QueueName): Promise<void>;
  /** Every job scheduler of every queue. */
  schedules(): Promise<ScheduleEntry[]>;
  close(): Promise<void>;
}

export interface JobQueueOptions {
  /** `persistent` for the worker (retries Redis forever), `one-shot` (default) for commands: they give up after TRAINSYNC_REDIS_TIMEOUT_MS. */
  redis?: RedisMode;
  /**
   * BullMQ's telemetry (bullmq-otel) when traces are on: queues, flows and workers trace
   * their operations, and a job carries the trace it was added in through Redis (in its
   * options), so the worker's spans continue it. Unset: no tracing.
   */
  telemetry?: Telemetry | undefined;
}

export function createJobQueue(config: Config, runner: JobRunner, options: JobQueueOptions = {}): JobQueue {
  const redis = new RedisConnections({ url: config.REDIS_URL, mode: options.redis ?? 'one-shot', timeoutMs: config.TRAINSYNC_REDIS_TIMEOUT_MS, log: runner.log });
  const connection = redis.primary;
  const telemetry = options.telemetry;
  const queues = Object.fromEntries(
    QUEUE_NAMES.map((name) => {
      const queue = new Queue(name, { connection, prefix: config.TRAINSYNC_QUEUE_PREFIX, ...(telemetry ? { telemetry } : {}) });
      // Without a listener BullMQ prints each error's stack; connection errors are the outage's, logged once.
      queue.on('error', (error) => {
        if (!redis.failed(error)) runner.log.error({ err: error, queue: name }, 'queue error');
      });
      return [name, queue];
    }),
  ) as Record<QueueName, Queue>;

  const optionsFor = (name: string, waited: boolean): JobsOptions => {
    const attempts = lookupJob(runner.catalog, name).attempts;
    return waited ? waitedJobOptions(config, attempts) : defaultJobOptions(config, attempts);
  };
  // The payload as its schema reads it, plus the organisation (which no payload schema names).
  const checked = (name: string, data: unknown, org: string): { queue: QueueName; data: unknown } => {
    const definition = lookupJob(runner.catalog, name);
    const parsed: unknown = definition.payload.parse(data);
    return { queue: definition.queue, data: typeof parsed === 'object' && parsed !== null ? { ...parsed, org } : parsed };
  };
  const toLink = (spec: ChainSpec, priority: number): ChainLink => {
    const { queue, data } = checked(spec.name, spec.data, spec.org);
    return {
      name: spec.name,
      queue,
      data,
      jobId: spec.jobId,
      options: { ...optionsFor(spec.name, true), ignoreDependencyOnFailure: true, priority },
      ...(spec.after ? { after: toLink(spec.after, priority) } : {}),
    };
  };

  const describe = async (queue: QueueName, jobId: string): Promise<FoundJob | undefined> => {
    const job = (await queues[queue].getJob(jobId)) as Job | undefined;
    if (!job?.id) return undefined;
    const state = await job.getState();
    const holder = state === 'active' ? await activeHolder(connection, queues[queue], job, config.TRAINSYNC_QUEUE_PREFIX) : undefined;
    return { id: job.id, name: job.name, queue, data: job.data, state, ...(holder ? { holder } : {}) };
  };

  return {
    queues,
    catalog: runner.catalog,
    redis,
    secrets: redisSecretStore(connection, config.TRAINSYNC_QUEUE_PREFIX),
    lockNotes: redisLockNotes(connection, config.TRAINSYNC_QUEUE_PREFIX),
    async add(name, data, options) {
      const job = checked(name, data, options.org);
      const added = await queues[job.queue].add(name, job.data, {
        ...optionsFor(name, options.waited ?? false),
        ...(options.jobId ? { jobId: options.jobId } : {}),
        ...(options.dedupeId ? { deduplication: { id: orgScoped(options.org, options.dedupeId) } } : {}),
        ...(options.priority ? { priority: fairPriority(options.priority) } : {}),
      });
      return { id: String(added.id), name, queue: job.queue, data: added.data };
    },
    // The n-th chain of a batch gets priority n: another organisation's small batch, added
    // later, runs beside this one's first chains instead of after its last (docs/several-organisations.md, "Fairness").
    addChains: (chains) => addChains(config, connection, chains.map((chain, index) => toLink(chain, fairPriority(index + 1))), telemetry),
    state: (queue, jobId) => queues[queue].getJobState(jobId),
    failedReason: async (queue, jobId) => {
      const state = await queues[queue].getJobState(jobId);
      const job = (await queues[queue].getJob(jobId)) as Job | undefined;
      return job && state === 'failed' ? failureReason(job.failedReason, job) : job?.failedReason || undefined;
    },
    async deduplicated(queue, dedupeId, org) {
      const id = await queues[queue].getDeduplicationJobId(orgScoped(org, dedupeId));
      const found = id ? await describe(queue, id) : undefined;
      return found && found.state !== 'completed' && found.state !== 'failed' ? found : undefined;
    },
    async activeJobs(queue, limit) {
      const active = await queues[queue].getActive(0, limit - 1);
      const found = await Promise.all(active.map((job) => describe(queue, String(job.id))));
      return found.filter((job): job is FoundJob => job !== undefined);
    },
    workerNames: async (queue) => [...(await connectedWorkers(queues[queue]))],
    workerSettings: async (workerName, org) => parsePublished(await connection.hget(workerSettingsKey(config.TRAINSYNC_QUEUE_PREFIX, workerName), org)),
    async find(jobId) {
      for (const name of QUEUE_NAMES) {
        const found = await describe(name, jobId);
        if (found) return found;
      }
      return undefined;
    },
    async takeOver(found) {
      const job = await queues[found.queue].getJob(found.id);
      if (job) await requeueOrphan(connection, queues[found.queue], job, config.TRAINSYNC_QUEUE_PREFIX);
    },
    async cancel(found) {
      const job = await queues[found.queue].getJob(found.id);
      return job ? removeOrphanOrQueued(connection, queues[found.queue], job, config.TRAINSYNC_QUEUE_PREFIX) : true;
    },
    async remove(queue, jobId) {
      await queues[queue].remove(jobId, { removeChildren: false });
    },
    async waitFor(queue, jobIds, onProgress, waitOptions = {}) {
      if (jobIds.length === 0) return [];
      const found = await Promise.all(jobIds.map(async (id) => ({ id, job: (await queues[queue].getJob(id)) as Job | undefined }))).catch((error: unknown) => {
        throw redis.isDown ? redis.unreachable(error) : error;
      });
      const jobs = found.flatMap((f) => (f.job ? [f.job] : []));
      // Each waited job adds a 'closing' listener to the queue: expected, not a leak.
      queues[queue].setMaxListeners(queues[queue].getMaxListeners() + jobs.length);
      try {
        const outcomes = await waitForJobs({ config, queue: queues[queue], redis, log: runner.log }, jobs, { onProgress, ...waitOptions });
        const gone = found.filter((f) => !f.job).map((f): JobOutcome => ({ jobId: f.id, name: '', status: 'failed', error: 'the job is no longer in the queue' }));
        return [...outcomes, ...gone];
      } finally {
        queues[queue].setMaxListeners(queues[queue].getMaxListeners() - jobs.length);
      }
    },
    async processHereIfNoWorker(queue) {
      const connected = await queues[queue].getWorkersCount();
      if (connected > 0) {
        runner.log.info({ queue, workers: connected }, 'a worker is connected; it will process the jobs');
        return undefined;
      }
      runner.log.info({ queue }, 'no worker is connected; processing the jobs in this process');
      return startWorkers(config, runner, [queue], redis, telemetry);
    },
    startWorkers: (names) => startWorkers(config, runner, names, redis, telemetry),
    async counts(queue) {
      // Positioned jobs (a batch's, see fairPriority) wait in BullMQ's prioritized set: still waiting to a person.
      const { prioritized = 0, ...counts } = await queues[queue].getJobCounts(...COUNTED_STATES, 'prioritized');
      return { ...counts, waiting: (counts.waiting ?? 0) + prioritized };
    },
    workers: (queue) => queues[queue].getWorkersCount(),
    async failedJobs(queue, limit) {
      return (await queues[queue].getFailed(0, limit - 1)).map((job) => ({
        id: String(job.id),
        name: job.name,
        failedReason: failureReason(job.failedReason, job),
        attemptsMade: job.attemptsMade,
        finishedAt: job.finishedOn ? new Date(job.finishedOn).toISOString() : null,
      }));
    },
    async upsertSchedule({ id, org, job, queue, pattern }) {
      // Scheduled runs carry `trigger: 'schedule'`, as the job's payload says who asked for it, and their organisation.
      await queues[queue].upsertJobScheduler(id, { pattern, tz: 'UTC' }, { name: job, data: { trigger: 'schedule', org }, opts: defaultJobOptions(config, lookupJob(runner.catalog, job).attempts) });
    },
    async removeSchedule(id, queue) {
      await queues[queue].removeJobScheduler(id);
    },
    async schedules() {
      const all = await Promise.all(QUEUE_NAMES.map((name) => queues[name].getJobSchedulers()));
      return all.flat().map((s) => ({ id: s.key, pattern: s.pattern ?? null, next: s.next ? new Date(s.next).toISOString() : null }));
    },
    async close() {
      // Queues share `connection` (BullMQ leaves a given connection open); quitting it waits for Redis, so bound that.
      await Promise.race([Promise.all(QUEUE_NAMES.map((name) => queues[name].close())), delay(CLOSE_TIMEOUT_MS)]);
      redis.close();
    },
  };
}

/**
 * The same queue, whose waits also report a job that makes no progress (`onStall`, one
 * line each time the reason changes): for a command that waits, such as `sync`.
 */
export function withWaitOptions(queue: JobQueue, options: WaitOptions): JobQueue {
  return { ...queue, waitFor: (name, jobIds, onProgress, more) => queue.waitFor(name, jobIds, onProgress, { ...options, ...more }) };
}
