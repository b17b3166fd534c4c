import { syncSeatUsage } from '../src/sync/seats.ts';
import { defineSyncJob } from '../src/sync/sync-job.ts';

/** Seats in use and in total, one row per run; "not applicable" without an unlimited plan. */
export const syncSeats = defineSyncJob({
  resource: 'seats',
  cron: '0 * * * *',
  run: (_payload, ctx) => syncSeatUsage(ctx),
});
