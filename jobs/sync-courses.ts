import { defineJob } from '../src/queue/define-job.ts';
import { JOB_NAMES, SYNC_QUEUE } from '../src/queue/names.ts';
import { syncSnapshot } from '../src/sync/snapshot.ts';
import { syncPayloadSchema } from '../src/sync/sync-payload.ts';
import { markMissingCourses, upsertCourses } from '../src/warehouse/load-courses.ts';

/** Courses and their categories: a full snapshot each run; vanished courses get removed_at. */
export const syncCourses = defineJob({
  name: JOB_NAMES.syncCourses,
  queue: SYNC_QUEUE,
  payload: syncPayloadSchema,
  exclusive: () => JOB_NAMES.syncCourses,
  run: (_payload, ctx) =>
    syncSnapshot(ctx, {
      resource: 'courses',
      pages: (signal) => ctx.platform.listCourses({}, { signal }),
      upsert: upsertCourses,
      markMissing: markMissingCourses,
    }),
});
