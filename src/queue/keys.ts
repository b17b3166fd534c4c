import type { OrgRef } from '../warehouse/scope.ts';

/**
 * BullMQ's Redis key layout, written in one place (as BullMQ's own queue-keys.ts does):
 * nothing else builds a key by hand. `prefix` is config's TRAINSYNC_QUEUE_PREFIX, which on
 * a Cluster is a hash tag ({trainsync}, src/lib/redis-target.ts): these keys then hash to
 * the queue's own slot, as BullMQ's do.
 */
export function queueKeys(prefix: string, queue: string): { events: string; meta: string; schedulers: string } {
  const base = `${prefix}:${queue}`;
  return { events: `${base}:events`, meta: `${base}:meta`, schedulers: `${base}:repeat` };
}

/** The lock of an active job: the job's own key plus ":lock", renewed by the worker running it. */
export function jobLockKey(prefix: string, queue: string, jobId: string): string {
  return `${prefix}:${queue}:${jobId}:lock`;
}

/**
 * A secret a queued job needs (an encrypted password), kept beside the queue under a key
 * of its own rather than in the job's data, which bull-board shows and BullMQ keeps for
 * days: `<prefix>:secret:<org>:<id>` (the prefix's hash tag keeps it in the queue's slot).
 */
export function jobSecretKey(prefix: string, { org }: OrgRef, id: string): string {
  return `${prefix}:secret:${org}:${id}`;
}

/**
 * What a worker process runs with (a hash: one field per organisation, each a fingerprint
 * of its platform origin, API key and database), so a command whose job it ran can tell
 * whether the result is one it would have got itself.
 */
export function workerSettingsKey(prefix: string, workerName: string): string {
  return `${prefix}:trainsync:worker-settings:${workerName}`;
}

/**
 * A short note about who holds a lock (a `reconcile --fix` of an organisation, src/provisioning/reconcile-lock.ts):
 * `<prefix>:lock-note:<org>:<name>`, read by whoever finds the lock taken, to say who has it.
 */
export function lockNoteKey(prefix: string, { org }: OrgRef, name: string): string {
  return `${prefix}:lock-note:${org}:${name}`;
}
