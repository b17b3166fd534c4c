import { PlatformError } from '../src/platform/errors.ts';
import { defineJob } from '../src/queue/define-job.ts';
import { SYNC_QUEUE } from '../src/queue/names.ts';
import { syncPayloadSchema } from '../src/queue/sync-payload.ts';
import { markMissingUsers, upsertUsers } from '../src/warehouse/load-users.ts';
import { recordNoteRun, syncSnapshot } from '../src/warehouse/snapshot-sync.ts';
import type { SyncSummary } from '../src/warehouse/sync-summary.ts';

/** Statuses that mean "this platform has no GET users", as opposed to a failure. */
const NOT_OFFERED = new Set([404, 405, 501]);

/**
 * The user dimension from the vendor-documented GET users. The seed spec lacks that
 * endpoint, so a platform without it records "not available" and the job succeeds.
 */
export const syncUsers = defineJob({
  name: 'sync-users',
  queue: SYNC_QUEUE,
  payload: syncPayloadSchema,
  exclusive: () => 'sync-users',
  async run(_payload, ctx): Promise<SyncSummary> {
    try {
      return await syncSnapshot(ctx, {
        resource: 'users',
        jobId: ctx.job.id,
        pages: (signal) => ctx.platform.listUsers({}, { signal }),
        upsert: upsertUsers,
        markMissing: markMissingUsers,
      });
    } catch (error) {
      if (error instanceof PlatformError && error.status !== undefined && NOT_OFFERED.has(error.status)) {
        ctx.log.info({ status: error.status }, 'the platform does not offer GET users; recorded as not available');
        return recordNoteRun(ctx, 'users', ctx.job.id, `not available (GET users answered ${error.status})`);
      }
      throw error;
    }
  },
});
