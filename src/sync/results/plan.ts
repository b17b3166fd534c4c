import type { JobContext } from '../../queue/job-context.ts';
import { getWatermark, listUnfinishedWindows } from '../sync-state.ts';
import { addDays, parseWindowKey, splitWindows, today, windowKey, type ResultWindow } from './days.ts';
import type { SyncPayload } from '../sync-payload.ts';
import type { OrgTx } from '../../warehouse/scope.ts';

/** The unfinished-window key of a walk of every page. */
export const FULL_WALK = 'full';

/** What one results run reads. */
export interface ResultsPlan {
  mode: 'full' | 'incremental' | 'backfill';
  windows: ResultWindow[];
  /** The watermark to store when the run ends (incremental and full only). */
  watermark?: string;
  /**
   * Backfill only: the days [start, end) whose results are stored. Windows ask the
   * platform for a day more on each side (their bounds are ambiguous); those extra
   * results are read but not stored.
   */
  store?: ResultWindow;
}

/** A backfill's plan (`--since/--until`), which reads nothing; undefined for any other run. */
export function backfillPlan(payload: SyncPayload, config: JobContext['config'], runDay = today()): ResultsPlan | undefined {
  if (!payload.since && !payload.until) return undefined;
  const since = payload.since ?? config.TRAINSYNC_RESULTS_EPOCH;
  const end = addDays(payload.until ?? runDay, 1);
  return { mode: 'backfill', windows: splitWindows(since, end, config.TRAINSYNC_RESULTS_WINDOW_DAYS), store: { start: since, end } };
}

/**
 * `--since/--until` backfills exactly those days and leaves the watermark alone; the
 * first run, `--full`, and a run after a full walk that did not finish walk every
 * page; otherwise the lookback before the watermark up to today, plus every window an
 * earlier run could not finish.
 */
export async function planResultsRun(resource: string, payload: SyncPayload, config: JobContext['config'], tx: OrgTx): Promise<ResultsPlan> {
  const runDay = today();
  const backfill = backfillPlan(payload, config, runDay);
  if (backfill) return backfill;
  // Read in the caller's transaction (the one that starts the run), one round trip each.
  const watermark = await getWatermark(tx, resource);
  const unfinished = (await listUnfinishedWindows(tx, resource)).map((w) => w.key);
  if (payload.full || !watermark || unfinished.includes(FULL_WALK)) return { mode: 'full', windows: [], watermark: runDay };
  const from = addDays(watermark < runDay ? watermark : runDay, -config.TRAINSYNC_RESULTS_LOOKBACK);
  const windows = splitWindows(from, addDays(runDay, 1), config.TRAINSYNC_RESULTS_WINDOW_DAYS);
  const planned = new Set(windows.map(windowKey));
  for (const key of unfinished) {
    const window = parseWindowKey(key);
    if (window && !planned.has(key)) windows.unshift(window);
  }
  return { mode: 'incremental', windows, watermark: runDay };
}
