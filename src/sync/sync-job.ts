import type { JobContext } from '../queue/job-context.ts';
import { defineJob, type JobDefinition } from '../queue/define-job.ts';
import { SYNC_QUEUE } from '../queue/names.ts';
import { syncSummarySchema, type SyncSummary } from './summary.ts';
import { syncPayloadSchema, unwindowedSyncPayloadSchema, type SyncPayload } from './sync-payload.ts';

export interface SyncJobSpec {
  /** The resource it copies: `sync <resource>` runs it, its job is `sync-<resource>`, its schedule `TRAINSYNC_CRON_<RESOURCE>` (`-` as `_`). */
  resource: string;
  /** The default cron line (UTC), e.g. `0 2 * * *`. */
  cron: string;
  /** The date options and `--full` reach the job (a windowed resource's); otherwise they are dropped from its payload. */
  windowed: boolean;
  run(payload: SyncPayload, ctx: JobContext): Promise<SyncSummary>;
}

/**
 * A sync job: on the sync queue, one at a time per resource across every worker, on a
 * schedule, returning a SyncSummary. Everything that lists resources (the `sync`
 * command, the schedulers, the metrics) reads it from the catalog.
 */
export function defineSyncJob(spec: SyncJobSpec): JobDefinition<typeof syncPayloadSchema | typeof unwindowedSyncPayloadSchema, SyncSummary> {
  const name = `sync-${spec.resource}`;
  return defineJob({
    name,
    queue: SYNC_QUEUE,
    payload: spec.windowed ? syncPayloadSchema : unwindowedSyncPayloadSchema,
    resource: spec.resource,
    summary: syncSummarySchema,
    schedule: { setting: `TRAINSYNC_CRON_${spec.resource.toUpperCase().replaceAll('-', '_')}`, default: spec.cron },
    exclusive: () => name,
    run: (payload, ctx) => spec.run(payload, ctx),
  });
}
