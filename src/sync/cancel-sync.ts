import type { FoundJob, JobQueue } from '../queue/job-queue.ts';
import { SYNC_QUEUE } from '../queue/names.ts';
import { jobOrg } from '../queue/org-scope.ts';
import type { OrgRef, OrgScope } from '../warehouse/scope.ts';
import { syncJobName, syncResources } from './catalog-resources.ts';
import { cancelRunsOfJob } from './runs-store.ts';

export type CancelOutcome = { ok: true; job: FoundJob; how: string; runs: number } | { ok: false; reason: string };

/**
 * Removes a queued or orphaned job (its process is gone) and records its run as cancelled:
 * `trainsync cancel` and the console's cancel. `target` is a sync resource or a job id; a
 * job a live worker runs is refused. `by` says who cancelled, for the run's error. Only jobs
 * and runs of the organisation of `deps.scope` are touched.
 */
export async function cancelQueuedOrOrphaned(deps: { queue: JobQueue; scope: OrgScope }, target: string, by: string): Promise<CancelOutcome> {
  const found = await cancelTarget(deps.queue, deps.scope, target);
  if (typeof found === 'string') return { ok: false, reason: found };
  const job = found;
  if (job.state === 'completed' || job.state === 'failed') return { ok: false, reason: `job ${job.id} (${job.name}) already ${job.state}; nothing to cancel` };
  if (job.state === 'active' && !job.holder?.orphaned) {
    return { ok: false, reason: `job ${job.id} (${job.name}) is running on worker ${job.holder?.worker ?? 'unknown'}; stop that process (Ctrl-C, or SIGTERM for a worker) to hand it back, or let it finish` };
  }
  const how = job.holder?.orphaned ? `orphaned: worker ${job.holder.worker ?? 'unknown'} is gone` : job.state;
  if (!(await deps.queue.cancel(job))) return { ok: false, reason: `job ${job.id} (${job.name}) was taken by a worker a moment ago; nothing was removed` };
  const runs = await cancelRunsOfJob(deps.scope, job.id, `cancelled by ${by} (${how})`);
  return { ok: true, job, how, runs };
}

async function cancelTarget(queue: JobQueue, { org }: OrgRef, target: string): Promise<FoundJob | string> {
  const resources = syncResources(queue.catalog.values());
  if ((resources as readonly string[]).includes(target)) {
    const job = await queue.deduplicated(SYNC_QUEUE, syncJobName(queue.catalog.values(), target as (typeof resources)[number]), org);
    return job ?? `no sync of ${target} is queued or running; nothing to cancel`;
  }
  const job = await queue.find(target);
  if (!job) return `no job ${target} in any queue, and no resource of that name (${resources.join(', ')}); see \`trainsync status\``;
  // Another organisation's job is not this organisation's to cancel (nor are its runs).
  const owner = jobOrg(job.data);
  return owner === org ? job : `job ${target} (${job.name}) belongs to organisation ${owner}, not ${org}; name it with --org ${owner}`;
}

/** Per sync resource, its job of the organisation of `scope` when one is queued or orphaned (what cancel may remove); a running one is left out. */
export async function cancellableSyncs(queue: JobQueue, { org }: OrgRef): Promise<Map<string, FoundJob>> {
  const found = await Promise.all(
    syncResources(queue.catalog.values()).map(async (resource) => [resource, await queue.deduplicated(SYNC_QUEUE, syncJobName(queue.catalog.values(), resource), org)] as const),
  );
  return new Map(found.filter((entry): entry is readonly [typeof entry[0], FoundJob] => entry[1] !== undefined && (entry[1].state !== 'active' || entry[1].holder?.orphaned === true)));
}
