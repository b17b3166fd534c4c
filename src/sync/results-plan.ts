import type { JobContext } from '../context.ts';
import { getWatermark } from '../warehouse/sync-state.ts';
import { addDays, splitWindows, today, type ResultWindow } from './result-windows.ts';
import type { SyncPayload } from './sync-payload.ts';

export const RESULTS = 'results';

/** What one results run reads. */
export interface ResultsPlan {
  mode: 'full' | 'incremental' | 'backfill';
  windows: ResultWindow[];
  /** The watermark to store when the run succeeds (incremental and full only). */
  watermark?: string;
}

/**
 * `--since/--until` backfills those days and leaves the watermark alone; the first run
 * and `--full` walk every page; otherwise the lookback before the watermark up to today.
 */
export async function planResultsRun(payload: SyncPayload, ctx: Pick<JobContext, 'config' | 'db'>): Promise<ResultsPlan> {
  const { config } = ctx;
  const runDay = today();
  if (payload.since || payload.until) {
    const since = payload.since ?? config.TRAINSYNC_RESULTS_EPOCH;
    const until = payload.until ?? runDay;
    return { mode: 'backfill', windows: splitWindows(since, addDays(until, 1), config.TRAINSYNC_RESULTS_WINDOW_DAYS) };
  }
  const watermark = await getWatermark(ctx.db, RESULTS);
  if (payload.full || !watermark) return { mode: 'full', windows: [], watermark: runDay };
  const from = addDays(watermark < runDay ? watermark : runDay, -config.TRAINSYNC_RESULTS_LOOKBACK);
  return { mode: 'incremental', windows: splitWindows(from, addDays(runDay, 1), config.TRAINSYNC_RESULTS_WINDOW_DAYS), watermark: runDay };
}
