import type { JobContext } from '../context.ts';
import { markUnseenResultsRemoved } from '../warehouse/load-results.ts';
import { deleteCheckpoints, emptyRunCounts, finishRun, setWatermark } from '../warehouse/sync-state.ts';
import { withRetriedTransaction } from '../warehouse/transaction.ts';
import { walkAllResults } from './results-full-walk.ts';
import { planResultsRun, RESULTS } from './results-plan.ts';
import { readWindows } from './results-windows.ts';
import { withRun } from './run.ts';
import type { SyncSummary } from './summary.ts';
import type { SyncPayload } from './sync-payload.ts';

/**
 * Results are incremental: each run re-reads a lookback window up to today, split into
 * date windows read concurrently; each window commits a checkpoint with its last rows,
 * so a crash resumes at the first unfinished window. The first run, and `--full`,
 * walk every page instead (undated results included) and checkpoint by page.
 *
 * Checkpoints are scoped to the BullMQ job: its retries and a restart after a crash
 * resume them; a new job starts a fresh plan (idempotent, so never wrong).
 */
export async function syncAllResults(payload: SyncPayload, ctx: JobContext): Promise<SyncSummary> {
  const plan = await planResultsRun(payload, ctx);
  const scope = `results:job:${ctx.job.id}`;
  return withRun(ctx, { resource: RESULTS, mode: plan.mode, params: payload, resumeKey: `${scope}:run` }, async (run) => {
    const counts = emptyRunCounts();
    const resumed = plan.mode === 'full' ? await walkAllResults(ctx, scope, run.id, counts) : await readWindows(ctx, scope, run.id, plan.windows, counts);
    await withRetriedTransaction(ctx.withPgClient, async (tx) => {
      const removed = plan.mode === 'full' ? await markUnseenResultsRemoved(tx.client, run.id) : 0;
      if (plan.watermark) await setWatermark(tx.db, RESULTS, plan.watermark);
      await deleteCheckpoints(tx.db, `${scope}:`);
      await finishRun(tx.db, run.id, { status: 'succeeded', removed });
    });
    return { windows: plan.windows.length, windowsResumed: resumed };
  });
}
