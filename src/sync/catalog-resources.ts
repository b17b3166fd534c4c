import type { AnyJobDefinition } from '../queue/define-job.ts';
import { SYNC_QUEUE } from '../queue/names.ts';

/** A resource `sync` can copy: a job of the sync queue that declares it (jobs/index.ts). */
export type SyncResource = string;

/** The sync jobs of a catalog, in jobs/index.ts order: the order `sync all` runs them. */
export function syncJobs(jobs: Iterable<AnyJobDefinition>): AnyJobDefinition[] {
  return [...jobs].filter((job) => job.queue === SYNC_QUEUE && job.resource !== undefined);
}

/** What `sync` can copy, in the order `sync all` runs them. */
export function syncResources(jobs: Iterable<AnyJobDefinition>): SyncResource[] {
  return syncJobs(jobs).map((job) => job.resource!);
}

/** The job that syncs a resource; an error naming the known resources when none does. */
export function syncJobOf(jobs: Iterable<AnyJobDefinition>, resource: SyncResource): AnyJobDefinition {
  const all = syncJobs(jobs);
  const job = all.find((j) => j.resource === resource);
  if (!job) throw new Error(`Unknown resource "${resource}": use ${all.map((j) => j.resource).join(', ')} or all.`);
  return job;
}

/** The name of the job that syncs a resource (syncJobOf). */
export function syncJobName(jobs: Iterable<AnyJobDefinition>, resource: SyncResource): string {
  return syncJobOf(jobs, resource).name;
}
