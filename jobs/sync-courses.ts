import { syncSnapshot } from '../src/sync/snapshot.ts';
import { defineSyncJob } from '../src/sync/sync-job.ts';
import { markMissingCourses, upsertCourses } from '../src/warehouse/load-courses.ts';

/** Courses and their categories: a full snapshot each run; vanished courses get removed_at. */
export const syncCourses = defineSyncJob({
  resource: 'courses',
  cron: '0 2 * * *',
  run: (_payload, ctx) =>
    syncSnapshot(ctx, {
      resource: 'courses',
      pages: (signal) => ctx.platform.listCourses({}, { signal }),
      upsert: upsertCourses,
      markMissing: markMissingCourses,
    }),
});
