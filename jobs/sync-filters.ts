import { syncSnapshot } from '../src/sync/snapshot.ts';
import { defineSyncJob } from '../src/sync/sync-job.ts';
import { markMissingFilters, upsertFilters } from '../src/warehouse/load-filters.ts';

/** Reporting filters and their answers: a full snapshot each run; vanished ones get removed_at. */
export const syncFilters = defineSyncJob({
  resource: 'filters',
  cron: '0 2 * * *',
  run: (_payload, ctx) =>
    syncSnapshot(ctx, {
      resource: 'filters',
      pages: (signal) => ctx.platform.listFilters({ signal }),
      upsert: upsertFilters,
      markMissing: markMissingFilters,
    }),
});
