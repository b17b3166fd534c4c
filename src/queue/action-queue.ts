import type { Queue } from 'bullmq';
import type { QueueName } from './names.ts';
import type { JobOutcome, WaitOptions } from './wait-for-jobs.ts';
import type { LockNotes } from './lock-notes.ts';
import type { SecretStore } from './secret-store.ts';

/**
 * The part of the queue that adds jobs by id and waits for them: what provisioning
 * needs (`provision`, `password`, and the scheduled `reconcile --fix` through its job
 * context). Declared apart from JobQueue, which extends it, so the job context can name
 * it without an import cycle (the queue's runner imports the context).
 */

/** A job as enqueued: enough to wait for it and to tell whether it merged with another. */
export interface EnqueuedJob {
  id: string;
  name: string;
  queue: QueueName;
  /** The payload the queue holds: another one's when the add merged with a job already there. */
  data: unknown;
}

export interface AddJobOptions {
  /** The organisation the job works for (its slug travels in the job's data as `org`). */
  org: string;
  /** A job with this id already queued or running takes the add's place (BullMQ deduplication). */
  dedupeId?: string;
  /** A fixed job id: the same id added twice is one job. */
  jobId?: string;
  /** A person waits for this job by id (provisioning): quicker first retries, longer retention. */
  waited?: boolean;
  /**
   * The job's position in its organisation's batch (1 = first): jobs run in order of it,
   * so one organisation's long batch and another's short one interleave (docs/several-organisations.md, "Fairness").
   * Unset: before every positioned job (schedules, webhooks).
   */
  priority?: number;
}

/** One link of a chain to enqueue; `after` must finish before this one starts. */
export interface ChainSpec {
  /** The organisation the job works for. */
  org: string;
  name: string;
  data: unknown;
  jobId: string;
  after?: ChainSpec;
}

export type JobState = Awaited<ReturnType<Queue['getJobState']>>;

export interface ActionQueue {
  /** Secrets a job needs (an encrypted password), kept beside the queue rather than in its data. */
  readonly secrets: SecretStore;
  /** Who holds a lock, for whoever finds it taken (a reconcile --fix of an organisation). */
  readonly lockNotes: LockNotes;
  add(name: string, data: unknown, options: AddJobOptions): Promise<EnqueuedJob>;
  /** Adds chains whose every link carries `ignoreDependencyOnFailure`: a failed link does not stall the rest. */
  addChains(chains: readonly ChainSpec[]): Promise<void>;
  state(queue: QueueName, jobId: string): Promise<JobState>;
  /** Why a failed job failed (undefined when it is not there or did not fail). */
  failedReason(queue: QueueName, jobId: string): Promise<string | undefined>;
  /** Removes a finished job so its id can be added again. */
  remove(queue: QueueName, jobId: string): Promise<void>;
  /**
   * Waits until each job has completed or failed for good; a job no longer in the queue
   * (also one that vanished while waited for: Redis emptied) counts as failed. Rejects
   * with an InfrastructureError when a one-shot process gives up on Redis.
   */
  waitFor(queue: QueueName, jobIds: readonly string[], onProgress?: (jobId: string, progress: unknown) => void, options?: WaitOptions): Promise<JobOutcome[]>;
  /**
   * The CLI's worker rule: when no worker process is connected to the queue, this
   * process works it until the returned handle is closed. Undefined when one is.
   */
  processHereIfNoWorker(queue: QueueName): Promise<{ close(): Promise<unknown> } | undefined>;
}
