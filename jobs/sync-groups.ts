import { syncSnapshot } from '../src/sync/snapshot.ts';
import { defineSyncJob } from '../src/sync/sync-job.ts';
import { markMissingGroups, upsertGroups } from '../src/warehouse/load-groups.ts';

/**
 * Groups and the courses each assigns (vendor GET groups): a full snapshot each run;
 * vanished groups get removed_at. A platform without the endpoint records "not
 * available" and the job succeeds.
 */
export const syncGroups = defineSyncJob({
  resource: 'groups',
  cron: '0 2 * * *',
  run: (_payload, ctx) =>
    syncSnapshot(ctx, {
      resource: 'groups',
      pages: (signal) => ctx.platform.listGroups({ signal }),
      upsert: upsertGroups,
      markMissing: markMissingGroups,
      whenNotOffered: (status) => `not available (GET groups answered ${status})`,
    }),
});
