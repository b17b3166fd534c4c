import type { JobContext } from '../context.ts';
import { mapConcurrent } from '../map-concurrent.ts';
import { listCheckpoints, saveCheckpoint, type RunCounts } from '../warehouse/sync-state.ts';
import { windowKey, windowQuery, type ResultWindow } from './result-windows.ts';
import { RESULTS } from './results-plan.ts';
import { MAX_READS, walkResults } from './results-walk.ts';

/** Reads the windows not yet checkpointed, a bounded number at a time. Returns how many were already done. */
export async function readWindows(ctx: JobContext, scope: string, runId: number, windows: readonly ResultWindow[], counts: RunCounts): Promise<number> {
  const prefix = `${scope}:window:`;
  const done = new Set((await listCheckpoints(ctx.db, prefix)).map((key) => key.slice(prefix.length)));
  const todo = windows.filter((window) => !done.has(windowKey(window)));
  const resumed = windows.length - todo.length;
  if (resumed > 0) ctx.log.info({ resumed, remaining: todo.length }, 'skipping windows finished before the restart');
  let windowsDone = resumed;
  await mapConcurrent(todo, ctx.config.TRAINSYNC_RESULTS_CONCURRENCY, async (window) => {
    await readWindow(ctx, `${prefix}${windowKey(window)}`, runId, window, counts);
    windowsDone += 1;
    ctx.progress({ resource: RESULTS, pages: counts.pages, rows: counts.inserted + counts.updated + counts.unchanged, windowsDone, windowsTotal: windows.length });
  });
  return resumed;
}

/** Reads one window until a read sees no drift (or as often as allowed); its checkpoint commits with its last rows. */
async function readWindow(ctx: JobContext, checkpointKey: string, runId: number, window: ResultWindow, counts: RunCounts): Promise<void> {
  for (let read = 1; ; read += 1) {
    const lastRead = read >= MAX_READS;
    const { drifted } = await walkResults(ctx, {
      runId,
      query: windowQuery(window),
      startPage: 1,
      counts,
      onBatch: async (tx, position) => {
        // A window is done when read without drift (or read as often as we allow).
        if (position.done && (!position.drifted || lastRead)) {
          await saveCheckpoint(tx.db, checkpointKey, { window, finishedAt: new Date().toISOString() }, runId);
        }
      },
    });
    if (!drifted) return;
    if (lastRead) {
      ctx.log.warn({ window, reads: read }, 'window kept changing while paged; kept what was read, the next run re-reads it');
      return;
    }
    ctx.log.info({ window, read }, 'window changed while paged; reading it again so nothing shifted past us');
  }
}
