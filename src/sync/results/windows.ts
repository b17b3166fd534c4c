import type { JobContext } from '../../runtime/context.ts';
import { errorMessage } from '../../lib/errors.ts';
import { mapConcurrent } from '../../lib/map-concurrent.ts';
import { PlatformError } from '../../platform/errors.ts';
import type { Result } from '../../platform/schemas.ts';
import { listCheckpoints, saveCheckpoint, type RunCounts } from '../sync-state.ts';
import { windowKey, windowQuery, type ResultWindow } from './days.ts';
import { RESULTS } from './plan.ts';
import type { WalkGap } from './gaps.ts';
import { MAX_READS, walkResults } from './walk.ts';

/** A window (or the whole walk) a run could not read to the end, and why. */
export interface UnfinishedRead {
  key: string;
  reason: string;
}

export interface WindowsRead {
  /** Windows finished by an earlier attempt of this job. */
  resumed: number;
  unfinished: UnfinishedRead[];
}

/**
 * Reads the windows not yet checkpointed, a bounded number at a time. A window with a
 * possible gap after the re-read cap, or whose page failed after the client's retries,
 * is left unfinished (the run ends incomplete and the next run reads it again)
 * while the others go on. A permanent error (a bad key, say) fails the whole run.
 */
export async function readWindows(
  ctx: JobContext,
  scope: string,
  runId: number,
  windows: readonly ResultWindow[],
  counts: RunCounts,
  keep?: (result: Result) => boolean,
): Promise<WindowsRead> {
  const prefix = `${scope}:window:`;
  const done = new Set((await listCheckpoints(ctx.db, ctx.org.slug, prefix)).map((key) => key.slice(prefix.length)));
  const todo = windows.filter((window) => !done.has(windowKey(window)));
  const resumed = windows.length - todo.length;
  if (resumed > 0) ctx.log.info({ resumed, remaining: todo.length }, 'skipping windows finished before the restart');
  let windowsDone = resumed;
  const unfinished: UnfinishedRead[] = [];
  await mapConcurrent(todo, ctx.config.TRAINSYNC_RESULTS_CONCURRENCY, async (window) => {
    const key = windowKey(window);
    try {
      const reason = await readWindow(ctx, `${prefix}${key}`, runId, window, counts, keep);
      if (reason) unfinished.push({ key, reason });
    } catch (error) {
      if (ctx.signal.aborted || !(error instanceof PlatformError) || !error.retryable) throw error;
      ctx.log.warn({ window: key, code: error.code }, 'a page of this window failed after retries; the run goes on and the next run reads the window again');
      unfinished.push({ key, reason: `a page failed: ${errorMessage(error)}` });
    }
    windowsDone += 1;
    ctx.progress({ resource: RESULTS, pages: counts.pages, rows: counts.inserted + counts.updated + counts.unchanged, windowsDone, windowsTotal: windows.length });
  });
  return { resumed, unfinished };
}

/**
 * Reads one window until a read has no possible gap (results arriving while it pages
 * are no gap: see gaps.ts); its checkpoint commits with its last rows. A
 * window with a gap is read again whole (windows are short). Returns why it is
 * unfinished when a gap remained for every read allowed.
 */
async function readWindow(
  ctx: JobContext,
  checkpointKey: string,
  runId: number,
  window: ResultWindow,
  counts: RunCounts,
  keep?: (result: Result) => boolean,
): Promise<string | undefined> {
  let gap: WalkGap | undefined;
  for (let read = 1; read <= MAX_READS; read += 1) {
    ({ gap } = await walkResults(ctx, {
      runId,
      query: windowQuery(window),
      startPage: 1,
      counts,
      keep,
      onBatch: async (tx, position) => {
        if (position.done && !position.gap) {
          await saveCheckpoint(tx.db, ctx.org.slug, checkpointKey, { window, finishedAt: new Date().toISOString() }, runId);
        }
      },
    }));
    if (!gap) return undefined;
    if (read < MAX_READS) ctx.log.info({ window, read, gap: gap.reason }, 'a result may have shifted past this window\'s pages while paged; reading the window again');
  }
  ctx.log.warn({ window, reads: MAX_READS, gap: gap?.reason }, 'a gap remained in this window after every read; the run ends incomplete and the next run reads it again');
  return `a gap remained after ${MAX_READS} reads: ${gap?.reason ?? 'unknown'}`;
}
