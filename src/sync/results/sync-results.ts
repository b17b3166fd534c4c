import type { JobContext } from '../../queue/job-context.ts';
import { clearSightings, markUnsighted } from '../../warehouse/load-staged.ts';
import type { WindowedResource } from '../resources/resource.ts';
import { deleteCheckpoints, recordUnfinishedWindows, setWatermark } from '../sync-state.ts';
import { emptyRunCounts } from '../runs-store.ts';
import { onDays, windowKey } from './days.ts';
import { walkAllResults } from './full-walk.ts';
import { backfillPlan, planResultsRun } from './plan.ts';
import type { OrgTx } from '../../warehouse/scope.ts';
import { readWindows, windowsState, type UnfinishedRead, type WindowsState } from './windows.ts';
import { closeRun, withRun } from '../run.ts';
import type { SyncSummary } from '../summary.ts';
import type { SyncPayload } from '../sync-payload.ts';

/** The note of a run that could not read everything it meant to. */
function incompleteNote(unfinished: readonly UnfinishedRead[]): string {
  const listed = unfinished.slice(0, 5).map((u) => `${u.key}: ${u.reason}`).join('; ');
  const more = unfinished.length > 5 ? `; and ${unfinished.length - 5} more` : '';
  return `incomplete: ${unfinished.length} window(s) may have missed results (${listed}${more}); the next run reads them again`;
}

/**
 * Results are incremental: each run re-reads a lookback window up to today, split into
 * date windows read concurrently; each window commits a checkpoint with its last rows,
 * so a crash resumes at the first unfinished window. The first run, and `--full`, read
 * every result (undated ones included): by closed date windows, the undated tail and the
 * open window when the list is large enough, else in one walk (full-walk.ts).
 *
 * Checkpoints are scoped to the BullMQ job: its retries and a restart after a crash
 * resume them; a new job starts a fresh plan (idempotent, so never wrong). Whether a
 * read is complete is the completeness rule's to say (completeness.ts): results
 * arriving while it pages cost nothing, a result removed behind the reader makes it
 * read back over the pages affected. A read the rule cannot prove, or whose page failed
 * for good, makes the run `incomplete`, and what it missed is remembered in
 * `trainsync.unfinished_windows` for the next plain run.
 */
export async function syncWindowed<T>(resource: WindowedResource<T>, payload: SyncPayload, jobCtx: JobContext): Promise<SyncSummary> {
  const name = resource.name;
  const scope = `${name}:job:${jobCtx.job.id}`;
  // Read in the transaction that starts (or resumes) the run: a backfill reads nothing.
  let plan = backfillPlan(payload, jobCtx.config);
  // With the plan, the windows' state (checkpoints of an earlier attempt, the date bounds): the same transaction.
  let state: WindowsState | undefined;
  const mode =
    plan?.mode ??
    (async (tx: OrgTx): Promise<string> => {
      plan = await planResultsRun(name, payload, jobCtx.config, tx);
      if (plan.mode !== 'full') state = await windowsState(tx, resource, scope);
      return plan.mode;
    });
  // The run's context: its requests count toward the run (run.ts).
  return withRun(jobCtx, { resource: name, mode, params: payload, resumeKey: `${scope}:run` }, async (run, ctx) => {
    const planned = plan;
    if (planned === undefined) throw new Error(`the ${name} run started without its plan`);
    const store = planned.store;
    const keep = store
      ? (record: T): boolean => {
          const day = resource.day(record);
          return day !== null && onDays(day, store);
        }
      : undefined;
    const counts = emptyRunCounts();
    let resumed: number;
    let unfinished: UnfinishedRead[];
    let finished: string[];
    let firstLoad = false;
    let windows = planned.windows.length;
    if (planned.mode === 'full') {
      const walk = await walkAllResults(ctx, resource, scope, run.id, counts);
      resumed = walk.resumed;
      firstLoad = walk.firstLoad;
      unfinished = walk.unfinished;
      finished = walk.finished;
      windows = walk.windows;
    } else {
      const read = await readWindows(ctx, resource, scope, run.id, planned.windows, counts, keep, { state });
      resumed = read.resumed;
      unfinished = read.unfinished;
      const missed = new Set(unfinished.map((u) => u.key));
      finished = planned.windows.map(windowKey).filter((key) => !missed.has(key));
    }
    await ctx.scope.retriedTransaction(async (tx) => {
      // A walk with a gap may have missed results that still exist: mark nothing removed.
      let removed = 0;
      // A first load found nothing stored, so nothing it could mark; it recorded no sightings.
      if (planned.mode === 'full' && unfinished.length === 0 && !firstLoad) removed = await markUnsighted(tx, resource.table, run.id);
      else if (planned.mode === 'full') await clearSightings(tx, resource.table, run.id);
      if (planned.watermark) await setWatermark(tx, name, planned.watermark);
      await recordUnfinishedWindows(tx, name, run.id, { finished, unfinished });
      await deleteCheckpoints(tx, `${scope}:`);
      await closeRun(tx.db, run, {
        status: unfinished.length > 0 ? 'incomplete' : 'succeeded',
        removed,
        quarantinedOfRun: true,
        note: unfinished.length > 0 ? incompleteNote(unfinished) : undefined,
      });
    });
    return { windows, windowsResumed: resumed };
  });
}
