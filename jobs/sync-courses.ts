import { defineJob } from '../src/queue/define-job.ts';
import { SYNC_QUEUE } from '../src/queue/names.ts';
import { syncPayloadSchema } from '../src/queue/sync-payload.ts';
import { markMissingCourses, upsertCourses } from '../src/warehouse/load-courses.ts';
import { syncSnapshot } from '../src/warehouse/snapshot-sync.ts';
import type { SyncSummary } from '../src/warehouse/sync-summary.ts';

/** Courses and their categories: a full snapshot each run; vanished courses get removed_at. */
export const syncCourses = defineJob({
  name: 'sync-courses',
  queue: SYNC_QUEUE,
  payload: syncPayloadSchema,
  exclusive: () => 'sync-courses',
  run: (_payload, ctx): Promise<SyncSummary> =>
    syncSnapshot(ctx, {
      resource: 'courses',
      jobId: ctx.job.id,
      pages: (signal) => ctx.platform.listCourses({}, { signal }),
      upsert: upsertCourses,
      markMissing: markMissingCourses,
    }),
});
