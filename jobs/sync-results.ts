import { defineJob } from '../src/queue/define-job.ts';
import { JOB_NAMES, SYNC_QUEUE } from '../src/queue/names.ts';
import { syncAllResults } from '../src/sync/results/sync-results.ts';
import { syncPayloadSchema } from '../src/sync/sync-payload.ts';

/**
 * Course results: incremental date windows from the watermark (with a lookback), the
 * whole list on the first run and with `--full`, or the days of `--since/--until`.
 * The engine is src/sync/results/sync-results.ts.
 */
export const syncResults = defineJob({
  name: JOB_NAMES.syncResults,
  queue: SYNC_QUEUE,
  payload: syncPayloadSchema,
  exclusive: () => JOB_NAMES.syncResults,
  run: (payload, ctx) => syncAllResults(payload, ctx),
});
