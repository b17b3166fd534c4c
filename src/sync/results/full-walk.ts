import { z } from 'zod';
import type { JobContext } from '../../queue/job-context.ts';
import { stagedTableEmpty } from '../../warehouse/load-staged.ts';
import type { Page } from '../../platform/types.ts';
import type { WindowedResource } from '../resources/resource.ts';
import { getCheckpoint, getWatermark, saveCheckpoint } from '../sync-state.ts';
import { type RunCounts } from '../runs-store.ts';
import { today } from './days.ts';
import { FULL_WALK } from './plan.ts';
import { planWalk, walkShapeSchema, type WalkShape } from './walk-plan.ts';
import { walkResults } from './walk.ts';
import { walkByWindows, listingKey } from './windowed-walk.ts';
import { boundsKey, type UnfinishedRead } from './windows.ts';

const readCheckpointSchema = z.object({
  cursor: z.number().int().min(0),
  total: z.number().int().min(0),
  pageSize: z.number().int().min(0),
  reads: z.number().int().min(0),
  uncertain: z.array(z.number().int().min(0)).optional(),
});

const fullWalkCheckpointSchema = z.object({
  /** The completeness rule's state as of the rows committed with it. */
  read: readCheckpointSchema.optional(),
  /** The walk ended before a restart: only finishing the run was left. */
  ended: z.object({ complete: z.boolean(), reason: z.string().optional() }).optional(),
  firstLoad: z.boolean().optional(),
});

/** How this job's walk reads the list, decided once before its first page and kept for a restart. */
const shapeCheckpointSchema = z.object({ firstLoad: z.boolean(), walk: walkShapeSchema });

export interface FullWalk {
  /** By windows: the closed windows an interrupted attempt had proven read; whole: 1 when it resumed an interrupted walk. */
  resumed: number;
  /** What the rule could not prove read (a result may have been skipped): windows, or the whole walk. */
  unfinished: UnfinishedRead[];
  /** What it proved read: cleared from the unfinished windows. */
  finished: string[];
  /**
   * The walk began on an empty `training.results`: nothing existed before it, so nothing
   * can have vanished, and it recorded no sightings; the removal pass is skipped.
   */
  firstLoad: boolean;
  /** Closed windows it read (0: the list was walked whole). */
  windows: number;
}

/**
 * Reads every result (undated ones included), proven complete by the completeness rule
 * or named unfinished. By closed date windows, then the undated tail and the open window
 * (windowed-walk.ts), when walk-plan.ts says they pay; else the whole list in one walk.
 * Records sightings so vanished results can be marked removed. A first load (see
 * `FullWalk.firstLoad`) writes by plain inserts and records no sightings; whether it is
 * one, and how the list is read, are decided before the first page and kept in a
 * checkpoint, so a resumed walk (whose table is no longer empty) goes on as it began.
 */
export async function walkAllResults<T>(ctx: JobContext, resource: WindowedResource<T>, scope: string, runId: number, counts: RunCounts): Promise<FullWalk> {
  const shapeKey = `${scope}:shape`;
  // A checkpoint this version cannot read (an older layout) decides again: never wrong.
  let shape = await getCheckpoint(ctx.scope, shapeKey, shapeCheckpointSchema.optional().catch(undefined));
  // The first page of the list, when it was read to decide: a whole walk starts from it.
  let firstPage: Page<T> | undefined;
  const whole = (await getCheckpoint(ctx.scope, `${scope}:full`, fullWalkCheckpointSchema.catch({}))) ?? {};
  const resumed = shape !== undefined || whole.read !== undefined || whole.ended !== undefined ? 1 : 0;
  if (shape === undefined) {
    const firstLoad = whole.firstLoad ?? (whole.read === undefined && whole.ended === undefined && (await stagedTableEmpty(ctx.scope, resource.table)));
    let walk: WalkShape;
    if (whole.read !== undefined || whole.ended !== undefined) walk = { kind: 'whole', why: 'a walk of the whole list was under way' };
    else ({ walk, firstPage } = await chooseShape(ctx, resource));
    shape = { firstLoad, walk };
    await saveCheckpoint(ctx.scope, shapeKey, shape, runId);
    ctx.log.info({ walk: walk.kind, ...(walk.kind === 'whole' ? { why: walk.why } : { windows: walk.windows.length, openDay: walk.openDay }) }, 'how this walk reads the results');
  }
  const { firstLoad } = shape;
  // A fallback to the whole list that a restart interrupted goes on where it was.
  if (shape.walk.kind === 'windows' && whole.read === undefined && whole.ended === undefined) {
    const byWindows = await walkByWindows(ctx, resource, scope, runId, counts, shape.walk, firstLoad);
    if (byWindows.walkWhole === undefined) {
      const { unfinished, finished } = byWindows;
      // A full walk that did not prove every part is walked again by the next run (it marked nothing removed).
      if (unfinished.length > 0 && !firstLoad) unfinished.unshift({ key: FULL_WALK, reason: 'some windows were not proven read, so no result was marked removed' });
      return { resumed: byWindows.resumed, firstLoad, unfinished, finished: unfinished.length === 0 ? [FULL_WALK, ...finished] : finished, windows: shape.walk.windows.length };
    }
    ctx.log.warn({ why: byWindows.walkWhole }, 'walking the whole list');
  }
  const walked = await walkWholeList(ctx, resource, scope, runId, counts, firstLoad, shape.walk.kind === 'whole' ? firstPage : undefined);
  return {
    resumed,
    firstLoad,
    unfinished: walked === undefined ? [] : [{ key: FULL_WALK, reason: walked }],
    finished: walked === undefined ? [FULL_WALK] : [],
    windows: shape.walk.kind === 'windows' ? shape.walk.windows.length : 0,
  };
}

/** walk-plan.ts's rule, from this organisation's remembered facts and the first page of the list. */
async function chooseShape<T>(ctx: JobContext, resource: WindowedResource<T>): Promise<{ walk: WalkShape; firstPage?: Page<T> }> {
  if ((await getWatermark(ctx.scope, boundsKey(resource.name))) === 'day') return { walk: { kind: 'whole', why: 'the platform takes whole dates only, so windows cannot be exact' } };
  if ((await getWatermark(ctx.scope, listingKey(resource.name))) === 'whole') return { walk: { kind: 'whole', why: 'the platform does not list undated results after the dated ones' } };
  const first = await ctx.platform.listPage(resource.endpoint, resource.request(undefined), 1, { signal: ctx.signal });
  if (first.totalEntities === undefined) return { walk: { kind: 'whole', why: 'the platform sent no totalEntities' }, firstPage: first };
  let earliest: string | undefined;
  for (const record of first.records) {
    const day = resource.day(record);
    if (day !== null && (earliest === undefined || Date.parse(day) < Date.parse(earliest))) earliest = day;
  }
  const walk = planWalk({
    total: first.totalEntities,
    firstPageSize: first.records.length + first.problems.length,
    earliest,
    openDay: today(),
    windowPages: ctx.config.TRAINSYNC_RESULTS_WALK_WINDOW_PAGES,
  });
  return { walk, firstPage: first };
}

/**
 * Walks every page without dates, reading ahead while the list is quiet, until the
 * completeness rule (completeness.ts) has proven every result listed throughout the walk
 * read, or gives up; the rule's state is checkpointed with each batch, so a restart goes
 * on where the committed rows end. Returns why it is unfinished, if it is.
 */
async function walkWholeList<T>(ctx: JobContext, resource: WindowedResource<T>, scope: string, runId: number, counts: RunCounts, firstLoad: boolean, firstPage: Page<T> | undefined): Promise<string | undefined> {
  const key = `${scope}:full`;
  const saved = (await getCheckpoint(ctx.scope, key, fullWalkCheckpointSchema.catch({}))) ?? {};
  if (saved.ended) return saved.ended.complete ? undefined : (saved.ended.reason ?? 'not every result was proven read');
  const walk = await walkResults(ctx, resource, {
    runId,
    request: resource.request(undefined),
    resume: saved.read,
    firstPage: saved.read === undefined ? firstPage : undefined,
    counts,
    // Sightings serve only the removal pass, which a first load skips.
    trackSightings: !firstLoad,
    firstLoad,
    // One sequence of pages: without requests ahead, each page would wait a whole round
    // trip. Two more than the windows an incremental run reads at once cover the time a
    // page takes to use; a concurrency of 1 means one request at a time.
    readAhead: ctx.config.TRAINSYNC_RESULTS_CONCURRENCY > 1 ? ctx.config.TRAINSYNC_RESULTS_CONCURRENCY + 2 : 1,
    onBatch: (tx, position) => {
      const { verdict } = position;
      const ended = verdict.kind === 'reading' ? undefined : { complete: verdict.kind === 'complete', ...(verdict.kind === 'incomplete' ? { reason: verdict.reason } : {}) };
      return saveCheckpoint(tx, key, { read: position.read, ended, firstLoad }, runId);
    },
  });
  if (walk.verdict.kind === 'incomplete') {
    ctx.log.warn({ reason: walk.verdict.reason }, 'the walk could not prove every result read; the run ends incomplete and the next run walks the results again');
    return walk.verdict.reason;
  }
  return undefined;
}
