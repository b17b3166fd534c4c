import { PlatformError } from '../src/platform/errors.ts';
import { defineJob } from '../src/queue/define-job.ts';
import { SYNC_QUEUE } from '../src/queue/names.ts';
import { syncPayloadSchema } from '../src/queue/sync-payload.ts';
import { insertSeatUsage } from '../src/warehouse/load-seats.ts';
import { emptyCounts, type SyncSummary } from '../src/warehouse/sync-summary.ts';
import { finishRun, startRun } from '../src/warehouse/sync-state.ts';
import { withTransaction } from '../src/warehouse/transaction.ts';

/**
 * One seat-usage row per run. An organisation without an unlimited plan answers
 * NO_UNLIMITED_PLAN: that is recorded as a "not applicable" row and the job succeeds.
 */
export const syncSeats = defineJob({
  name: 'sync-seats',
  queue: SYNC_QUEUE,
  payload: syncPayloadSchema,
  exclusive: () => 'sync-seats',
  async run(_payload, ctx): Promise<SyncSummary> {
    const started = Date.now();
    let seats: { seatsInUse: number | null; totalSeats: number | null; applicable: boolean };
    try {
      const answer = await ctx.platform.getSeats();
      seats = { seatsInUse: answer.seatsInUse, totalSeats: answer.totalSeats, applicable: true };
    } catch (error) {
      if (!(error instanceof PlatformError && error.code === 'NO_UNLIMITED_PLAN')) throw error;
      seats = { seatsInUse: null, totalSeats: null, applicable: false };
    }
    const note = seats.applicable ? undefined : 'not applicable (NO_UNLIMITED_PLAN)';
    const counts = { ...emptyCounts(), pages: 1, inserted: 1 };
    const runId = await withTransaction(ctx.pool, async (client) => {
      const id = await startRun(client, { resource: 'seats', mode: 'snapshot', params: {}, jobId: ctx.job.id });
      await insertSeatUsage(client, { observedAt: new Date(), ...seats });
      await finishRun(client, id, { status: 'succeeded', ...counts, note });
      return id;
    });
    return { resource: 'seats', runId, mode: 'snapshot', ...counts, durationMs: Date.now() - started, ...(note ? { note } : {}) };
  },
});
