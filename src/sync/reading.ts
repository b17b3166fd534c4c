import type { JobContext } from '../queue/job-context.ts';
import { PlatformError } from '../platform/errors.ts';
import { insertReading } from '../warehouse/load-reading.ts';
import { closeRun, withRun } from './run.ts';
import type { ReadingResource } from './resources/resource.ts';
import type { SyncSummary } from './summary.ts';

/**
 * One row per run (seats). A platform that answers the resource's `unavailable` code
 * (seats: NO_UNLIMITED_PLAN) gets a row without a reading, and the run succeeds with
 * its note.
 */
export function syncReading<T>(jobCtx: JobContext, resource: ReadingResource<T>): Promise<SyncSummary> {
  // The run's context: its requests count toward the run (run.ts).
  return withRun(jobCtx, { resource: resource.name, mode: 'snapshot' }, async (run, ctx) => {
    let reading: T | undefined;
    let note: string | undefined;
    try {
      reading = await ctx.platform.read(resource.endpoint);
    } catch (error) {
      const unavailable = resource.unavailable;
      if (!(unavailable && error instanceof PlatformError && error.code === unavailable.code)) throw error;
      note = unavailable.note;
    }
    await ctx.scope.transaction(async (tx) => {
      await insertReading(tx, resource.table, new Date(), reading);
      await closeRun(tx.db, run, { status: 'succeeded', pages: 1, inserted: 1, note });
    });
  });
}
