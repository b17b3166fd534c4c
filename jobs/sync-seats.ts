import { defineJob } from '../src/queue/define-job.ts';
import { JOB_NAMES, SYNC_QUEUE } from '../src/queue/names.ts';
import { syncSeatUsage } from '../src/sync/seats.ts';
import { syncPayloadSchema } from '../src/sync/sync-payload.ts';

/** Seats in use and in total, one row per run; "not applicable" without an unlimited plan. */
export const syncSeats = defineJob({
  name: JOB_NAMES.syncSeats,
  queue: SYNC_QUEUE,
  payload: syncPayloadSchema,
  exclusive: () => JOB_NAMES.syncSeats,
  run: (_payload, ctx) => syncSeatUsage(ctx),
});
