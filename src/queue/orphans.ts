import type { Job, Queue } from 'bullmq';
import type { RedisClient } from '../lib/redis-client.ts';
import { jobLockKey } from './keys.ts';

/**
 * Who holds an active job. A job is `orphaned` when its lock has expired, or when the
 * worker that took it (its `processedBy`) is no longer connected to Redis: a `sync`
 * killed from outside, or stopped before it could hand its job back. Redis drops a dead
 * process's connections at once, so this is known in a moment, not after the lock's
 * minute and BullMQ's two stalled checks.
 */
export interface ActiveHolder {
  orphaned: boolean;
  /** The worker that took the job (host:pid), when it recorded one. */
  worker: string | undefined;
}

/** The names of the workers connected to `queue` right now. */
export async function connectedWorkers(queue: Queue): Promise<Set<string>> {
  const clients = (await queue.getWorkers()) as Array<{ rawname?: string }>;
  return new Set(clients.map((client) => client.rawname?.split(':w:')[1]).filter((name): name is string => name !== undefined));
}

export async function activeHolder(redis: RedisClient, queue: Queue, job: Job, prefix: string, workers?: Set<string>): Promise<ActiveHolder> {
  const worker = job.processedBy || undefined;
  const locked = (await redis.exists(jobLockKey(prefix, queue.name, String(job.id)))) === 1;
  if (!locked) return { orphaned: true, worker };
  // A job taken by an unnamed worker (an older version) cannot be matched: trust its lock.
  if (worker === undefined) return { orphaned: false, worker };
  const alive = workers ?? (await connectedWorkers(queue));
  return { orphaned: !alive.has(worker), worker };
}

/**
 * Puts an orphaned active job back in the queue, under its own id, so the next worker
 * resumes it from its checkpoints (and its run). The dead holder's lock goes first.
 */
export async function requeueOrphan(redis: RedisClient, queue: Queue, job: Job, prefix: string): Promise<void> {
  await redis.del(jobLockKey(prefix, queue.name, String(job.id)));
  // Token "0": no lock to check (there is none now); BullMQ's own moveToWait does the rest.
  await job.moveToWait('0');
}

/** Removes a queued or orphaned job for good (its deduplication entry with it). False when BullMQ kept it (it was locked again). */
export async function removeOrphanOrQueued(redis: RedisClient, queue: Queue, job: Job, prefix: string): Promise<boolean> {
  await redis.del(jobLockKey(prefix, queue.name, String(job.id)));
  const removed = await queue.remove(String(job.id), { removeChildren: false });
  return removed === 1;
}
