import { defineJob } from '../src/queue/define-job.ts';
import { JOB_NAMES, SYNC_QUEUE } from '../src/queue/names.ts';
import { syncSnapshot } from '../src/sync/snapshot.ts';
import { syncPayloadSchema } from '../src/sync/sync-payload.ts';
import { markMissingUsers, upsertUsers } from '../src/warehouse/load-users.ts';

/**
 * The user dimension from the vendor-documented GET users. The seed spec lacks that
 * endpoint, so a platform without it records "not available" and the job succeeds.
 */
export const syncUsers = defineJob({
  name: JOB_NAMES.syncUsers,
  queue: SYNC_QUEUE,
  payload: syncPayloadSchema,
  exclusive: () => JOB_NAMES.syncUsers,
  run: (_payload, ctx) =>
    syncSnapshot(ctx, {
      resource: 'users',
      pages: (signal) => ctx.platform.listUsers({}, { signal }),
      upsert: upsertUsers,
      markMissing: markMissingUsers,
      whenNotOffered: (status) => `not available (GET users answered ${status})`,
    }),
});
