import { defineJob } from '../src/queue/define-job.ts';
import { JOB_NAMES, SYNC_QUEUE } from '../src/queue/names.ts';
import { syncSnapshot } from '../src/sync/snapshot.ts';
import { syncPayloadSchema } from '../src/sync/sync-payload.ts';
import { markMissingGroups, upsertGroups } from '../src/warehouse/load-groups.ts';

/**
 * Groups and the courses each assigns (vendor GET groups): a full snapshot each run;
 * vanished groups get removed_at. A platform without the endpoint records "not
 * available" and the job succeeds.
 */
export const syncGroups = defineJob({
  name: JOB_NAMES.syncGroups,
  queue: SYNC_QUEUE,
  payload: syncPayloadSchema,
  exclusive: () => JOB_NAMES.syncGroups,
  run: (_payload, ctx) =>
    syncSnapshot(ctx, {
      resource: 'groups',
      pages: (signal) => ctx.platform.listGroups({ signal }),
      upsert: upsertGroups,
      markMissing: markMissingGroups,
      whenNotOffered: (status) => `not available (GET groups answered ${status})`,
    }),
});
