import type { JobContext } from '../../queue/job-context.ts';
import { errorMessage } from '../../lib/errors.ts';
import { mapConcurrent } from '../../lib/map-concurrent.ts';
import { PlatformError } from '../../platform/errors.ts';
import type { WindowedResource } from '../resources/resource.ts';
import type { OrgDb } from '../../warehouse/scope.ts';
import { getWatermark, listCheckpoints, saveCheckpoint, setWatermark } from '../sync-state.ts';
import { type RunCounts } from '../runs-store.ts';
import { windowKey, windowQuery, type ResultWindow, type WindowBounds } from './days.ts';
import { walkResults } from './walk.ts';

/** A window (or the whole walk) a run could not read to the end, and why. */
export interface UnfinishedRead {
  key: string;
  reason: string;
}

/** How a walk's windows are read (an incremental run's are read as the defaults say). */
export interface WindowsOptions {
  /** Windows read at once (default TRAINSYNC_RESULTS_CONCURRENCY). */
  concurrency?: number | undefined;
  /** Record every id seen, so a full walk can mark vanished results removed. */
  trackSightings?: boolean | undefined;
  /** A first load into an empty table: plain inserts (see WalkOptions.firstLoad). */
  firstLoad?: boolean | undefined;
  /** Told each window's total as its read ended (proven or not). */
  onTotal?: ((window: ResultWindow, total: number) => void) | undefined;
  /** What `windowsState` read already (in the transaction that started the run): not read again. */
  state?: WindowsState | undefined;
}

/** The windows of a job finished before a restart (their checkpoints' keys), and the platform's date bounds. */
export interface WindowsState {
  finishedKeys: string[];
  bounds: Bounds;
}

/** The checkpoints' prefix of a job's windows. */
const windowsPrefix = (scope: string): string => `${scope}:window:`;

/** Reads what `readWindows` starts from, in the caller's transaction. */
export async function windowsState<T>(db: OrgDb, resource: WindowedResource<T>, scope: string): Promise<WindowsState> {
  return { finishedKeys: await listCheckpoints(db, windowsPrefix(scope)), bounds: await windowBounds(db, resource) };
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
export async function readWindows<T>(
  ctx: JobContext,
  resource: WindowedResource<T>,
  scope: string,
  runId: number,
  windows: readonly ResultWindow[],
  counts: RunCounts,
  keep?: (record: T) => boolean,
  options: WindowsOptions = {},
): Promise<WindowsRead> {
  const prefix = windowsPrefix(scope);
  // The windows finished before a restart and the platform's date bounds, in one scoped
  // transaction (the run's start, when the caller read them there).
  const { finishedKeys, bounds } = options.state ?? (await ctx.scope.transaction((tx) => windowsState(tx, resource, scope)));
  const done = new Set(finishedKeys.map((key) => key.slice(prefix.length)));
  const todo = windows.filter((window) => !done.has(windowKey(window)));
  const resumed = windows.length - todo.length;
  if (resumed > 0) ctx.log.info({ resumed, remaining: todo.length }, 'skipping windows finished before the restart');
  let windowsDone = resumed;
  const unfinished: UnfinishedRead[] = [];
  await mapConcurrent(todo, options.concurrency ?? ctx.config.TRAINSYNC_RESULTS_CONCURRENCY, async (window) => {
    const key = windowKey(window);
    try {
      const reason = await readWindow(ctx, resource, `${prefix}${key}`, runId, window, counts, bounds, keep, options);
      if (reason) unfinished.push({ key, reason });
    } catch (error) {
      if (ctx.signal.aborted || !(error instanceof PlatformError) || !error.retryable) throw error;
      ctx.log.warn({ window: key, code: error.code }, 'a page of this window failed after retries; the run goes on and the next run reads the window again');
      unfinished.push({ key, reason: `a page failed: ${errorMessage(error)}` });
    }
    windowsDone += 1;
    ctx.progress({ resource: resource.name, pages: counts.pages, rows: counts.inserted + counts.updated + counts.unchanged, windowsDone, windowsTotal: windows.length });
  });
  return { resumed, unfinished };
}

/**
 * Reads one window, one page at a time, until the completeness rule (completeness.ts)
 * has proven every result listed throughout the read read (results arriving while it
 * pages cost nothing; a removal makes it read back over the page it shifted a result
 * onto); its checkpoint commits with its last rows. Returns why it is unfinished when
 * the rule could not prove it.
 */
async function readWindow<T>(
  ctx: JobContext,
  resource: WindowedResource<T>,
  checkpointKey: string,
  runId: number,
  window: ResultWindow,
  counts: RunCounts,
  bounds: Bounds,
  keep: ((record: T) => boolean) | undefined,
  options: WindowsOptions,
): Promise<string | undefined> {
  let verdict;
  let total: number | undefined;
  const asked = bounds.now;
  try {
    ({ verdict, total } = await walkWindow(ctx, resource, checkpointKey, runId, window, counts, asked, keep, options));
  } catch (error) {
    if (asked !== 'instant' || !refusesDateTimes(error)) throw error;
    // Once per organisation: remembered, so later runs ask in whole days from the start.
    if (bounds.now === 'instant') {
      bounds.now = 'day';
      await setWatermark(ctx.scope, boundsKey(resource.name), 'day');
      ctx.log.warn({ window, error: errorMessage(error) }, 'the platform refused date-time bounds; reading windows by whole days from now on');
    }
    ({ verdict, total } = await walkWindow(ctx, resource, checkpointKey, runId, window, counts, bounds.now, keep, options));
  }
  if (total !== undefined) options.onTotal?.(window, total);
  if (verdict.kind === 'complete') return undefined;
  ctx.log.warn({ window, reason: verdict.reason }, 'this window could not be proven read; the run ends incomplete and the next run reads it again');
  return verdict.reason;
}

/** Where the bounds this organisation's platform takes for a resource are remembered (beside its watermark). */
export function boundsKey(resource: string): string {
  return `${resource}:window-bounds`;
}

/** Shared by the windows of one run, so one refusal switches them all. */
interface Bounds {
  now: WindowBounds;
}

async function windowBounds<T>(db: OrgDb, resource: WindowedResource<T>): Promise<Bounds> {
  return { now: (await getWatermark(db, boundsKey(resource.name))) === 'day' ? 'day' : 'instant' };
}

/** A 400 naming a date bound: the platform reads dates only (the seed's reading). */
function refusesDateTimes(error: unknown): boolean {
  if (!(error instanceof PlatformError) || error.status !== 400) return false;
  return /startDate|endDate/i.test(`${JSON.stringify(error.details ?? null)} ${error.message}`);
}

function walkWindow<T>(
  ctx: JobContext,
  resource: WindowedResource<T>,
  checkpointKey: string,
  runId: number,
  window: ResultWindow,
  counts: RunCounts,
  bounds: WindowBounds,
  keep: ((record: T) => boolean) | undefined,
  options: WindowsOptions,
): ReturnType<typeof walkResults> {
  return walkResults(ctx, resource, {
    runId,
    request: resource.request(windowQuery(window, bounds)),
    counts,
    keep,
    trackSightings: options.trackSightings ?? false,
    firstLoad: options.firstLoad ?? false,
    onBatch: async (tx, position) => {
      if (position.verdict.kind === 'complete') {
        await saveCheckpoint(tx, checkpointKey, { window, finishedAt: new Date().toISOString() }, runId);
      }
    },
  });
}
