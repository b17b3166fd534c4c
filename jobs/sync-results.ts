import { syncAllResults } from '../src/sync/results/sync-results.ts';
import { defineSyncJob } from '../src/sync/sync-job.ts';

/**
 * Course results: incremental date windows from the watermark (with a lookback), the
 * whole list on the first run and with `--full`, or the days of `--since/--until`.
 * The engine is src/sync/results/sync-results.ts.
 */
export const syncResults = defineSyncJob({
  resource: 'results',
  cron: '0 2 * * *',
  run: (payload, ctx) => syncAllResults(payload, ctx),
});
