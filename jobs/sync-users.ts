import { syncSnapshot } from '../src/sync/snapshot.ts';
import { defineSyncJob } from '../src/sync/sync-job.ts';
import { markMissingUsers, upsertUsers } from '../src/warehouse/load-users.ts';

/**
 * The user dimension from the vendor-documented GET users. The seed spec lacks that
 * endpoint, so a platform without it records "not available" and the job succeeds.
 */
export const syncUsers = defineSyncJob({
  resource: 'users',
  cron: '0 2 * * *',
  run: (_payload, ctx) =>
    syncSnapshot(ctx, {
      resource: 'users',
      pages: (signal) => ctx.platform.listUsers({}, { signal }),
      upsert: upsertUsers,
      markMissing: markMissingUsers,
      whenNotOffered: (status) => `not available (GET users answered ${status})`,
    }),
});
