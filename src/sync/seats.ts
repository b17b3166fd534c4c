import type { JobContext } from '../queue/job-context.ts';
import { PlatformError } from '../platform/errors.ts';
import { insertSeatUsage, type SeatObservation } from '../warehouse/load-seats.ts';
import { finishRun } from './sync-state.ts';
import { withTransaction } from '../warehouse/transaction.ts';
import { withRun } from './run.ts';
import type { SyncSummary } from './summary.ts';

/**
 * One seat-usage row per run. An organisation without an unlimited plan answers
 * NO_UNLIMITED_PLAN: that is recorded as a "not applicable" row and the run succeeds.
 */
export function syncSeatUsage(ctx: JobContext): Promise<SyncSummary> {
  return withRun(ctx, { resource: 'seats', mode: 'snapshot' }, async (run) => {
    let seats: Omit<SeatObservation, 'observedAt'>;
    try {
      const answer = await ctx.platform.getSeats();
      seats = { seatsInUse: answer.seatsInUse, totalSeats: answer.totalSeats, applicable: true };
    } catch (error) {
      if (!(error instanceof PlatformError && error.code === 'NO_UNLIMITED_PLAN')) throw error;
      seats = { seatsInUse: null, totalSeats: null, applicable: false };
    }
    const note = seats.applicable ? undefined : 'not applicable (NO_UNLIMITED_PLAN)';
    await withTransaction(ctx.withPgClient, async (tx) => {
      await insertSeatUsage(tx.client, ctx.org.slug, { observedAt: new Date(), ...seats });
      await finishRun(tx.db, run.id, { status: 'succeeded', pages: 1, inserted: 1, note });
    });
  });
}
