import { defineJob } from '../src/queue/define-job.ts';
import { SYNC_QUEUE } from '../src/queue/names.ts';
import { syncPayloadSchema } from '../src/queue/sync-payload.ts';
import { markMissingFilters, upsertFilters } from '../src/warehouse/load-filters.ts';
import { syncSnapshot } from '../src/warehouse/snapshot-sync.ts';
import type { SyncSummary } from '../src/warehouse/sync-summary.ts';

/** Reporting filters and their answers: a full snapshot each run; vanished ones get removed_at. */
export const syncFilters = defineJob({
  name: 'sync-filters',
  queue: SYNC_QUEUE,
  payload: syncPayloadSchema,
  exclusive: () => 'sync-filters',
  run: (_payload, ctx): Promise<SyncSummary> =>
    syncSnapshot(ctx, {
      resource: 'filters',
      jobId: ctx.job.id,
      pages: (signal) => ctx.platform.listFilters({ signal }),
      upsert: upsertFilters,
      markMissing: markMissingFilters,
    }),
});
