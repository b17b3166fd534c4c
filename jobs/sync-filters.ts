import { defineJob } from '../src/queue/define-job.ts';
import { JOB_NAMES, SYNC_QUEUE } from '../src/queue/names.ts';
import { syncSnapshot } from '../src/sync/snapshot.ts';
import { syncPayloadSchema } from '../src/sync/sync-payload.ts';
import { markMissingFilters, upsertFilters } from '../src/warehouse/load-filters.ts';

/** Reporting filters and their answers: a full snapshot each run; vanished ones get removed_at. */
export const syncFilters = defineJob({
  name: JOB_NAMES.syncFilters,
  queue: SYNC_QUEUE,
  payload: syncPayloadSchema,
  exclusive: () => JOB_NAMES.syncFilters,
  run: (_payload, ctx) =>
    syncSnapshot(ctx, {
      resource: 'filters',
      pages: (signal) => ctx.platform.listFilters({ signal }),
      upsert: upsertFilters,
      markMissing: markMissingFilters,
    }),
});
