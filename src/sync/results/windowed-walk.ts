import { z } from 'zod';
import type { JobContext } from '../../queue/job-context.ts';
import { errorMessage } from '../../lib/errors.ts';
import { PlatformError } from '../../platform/errors.ts';
import type { ListRequest, Page } from '../../platform/types.ts';
import type { WindowedResource } from '../resources/resource.ts';
import { getCheckpoint, saveCheckpoint, setWatermark } from '../sync-state.ts';
import type { RunCounts } from '../runs-store.ts';
import { addDays, parseDay, windowKey } from './days.ts';
import { openWindowStep, type WindowRead } from './open-window.ts';
import { UndatedTail, type TailOutcome } from './undated-tail.ts';
import { FLOOR_DAY, fromDay, type WalkShape } from './walk-plan.ts';
import { walkResults, type ReadBetweenPages } from './walk.ts';
import { readWindows, type UnfinishedRead } from './windows.ts';

type WindowsShape = Extract<WalkShape, { kind: 'windows' }>;

/** Counts asked for after one page at most, while the total keeps moving. */
const MOST_COUNTS = 4;

/** Where it is remembered that an organisation's list must be walked whole (beside its watermark). */
export function listingKey(resource: string): string {
  return `${resource}:listing`;
}

export interface WindowedWalk {
  /** Closed windows an earlier attempt of this job had proven read. */
  resumed: number;
  unfinished: UnfinishedRead[];
  finished: string[];
  /** The undated tail could not be counted: the caller walks the whole list instead. */
  walkWhole?: string;
}

const undatedDoneSchema = z.object({ covered: z.boolean(), why: z.string().optional() });
const openDoneSchema = z.object({ unfinished: z.string().optional() });

/**
 * A first load or full walk by windows (docs/completeness.md, "First loads and full walks
 * read closed windows"): the closed windows several at once, each one page at a time
 * under the completeness rule and each checkpointed with its last rows; then the tail of
 * the list without dates, counted (undated-tail.ts); then the open window, read and read
 * again (open-window.ts). Each part is checkpointed when done, so a killed walk resumes
 * at the first part not done (a closed window by window).
 */
export async function walkByWindows<T>(ctx: JobContext, resource: WindowedResource<T>, scope: string, runId: number, counts: RunCounts, shape: WindowsShape, firstLoad: boolean): Promise<WindowedWalk> {
  const concurrency = ctx.config.TRAINSYNC_RESULTS_CONCURRENCY;
  /** Each closed window's total as its read ended: the undated count's groups are balanced by them. */
  const windowTotals = new Map<string, number>();
  const closed = await readWindows(ctx, resource, scope, runId, shape.windows, counts, undefined, {
    // As many sequences of pages as the whole walk keeps pages in flight (see full-walk.ts).
    concurrency: concurrency > 1 ? concurrency + 2 : 1,
    trackSightings: !firstLoad,
    firstLoad,
    onTotal: (window, total) => windowTotals.set(windowKey(window), total),
  });
  const unfinished = [...closed.unfinished];
  const missed = new Set(unfinished.map((u) => u.key));
  const finished = shape.windows.map(windowKey).filter((key) => !missed.has(key));

  const undatedKey = `${scope}:undated`;
  let undated = await getCheckpoint(ctx.scope, undatedKey, undatedDoneSchema.optional().catch(undefined));
  if (undated === undefined) {
    undated = await readUndated(ctx, resource, runId, counts, shape, firstLoad, windowTotals);
    await saveCheckpoint(ctx.scope, undatedKey, undated, runId);
  }
  if (!undated.covered) return { resumed: closed.resumed, unfinished, finished, walkWhole: undated.why ?? 'the undated results could not be counted' };

  const openKey = `${scope}:open`;
  const openWindow = { start: shape.openDay, end: addDays(shape.openDay, 1) };
  let open = await getCheckpoint(ctx.scope, openKey, openDoneSchema.optional().catch(undefined));
  if (open === undefined) {
    open = await readOpenWindow(ctx, resource, runId, counts, shape.openDay, firstLoad);
    await saveCheckpoint(ctx.scope, openKey, open, runId);
  }
  if (open.unfinished !== undefined) unfinished.push({ key: windowKey(openWindow), reason: open.unfinished });
  else finished.push(windowKey(openWindow));
  return { resumed: closed.resumed, unfinished, finished };
}

/**
 * Reads the tail of the list without dates until the count says it saw every undated
 * result: once, and when the count cannot tell, again from the tail's start until it can
 * (undated-tail.ts, `confirm`); says why not otherwise. A count that shows the list puts
 * undated results elsewhere is remembered, so later walks of this organisation read it whole.
 */
async function readUndated<T>(
  ctx: JobContext,
  resource: WindowedResource<T>,
  runId: number,
  counts: RunCounts,
  shape: WindowsShape,
  firstLoad: boolean,
  windowTotals: ReadonlyMap<string, number>,
): Promise<{ covered: boolean; why?: string }> {
  let outcome: TailOutcome;
  try {
    outcome = await readTail(ctx, resource, runId, counts, shape, firstLoad, countGroups(shape, windowTotals));
  } catch (error) {
    if (ctx.signal.aborted || !(error instanceof PlatformError) || !(error.retryable || error.status === 400)) throw error;
    ctx.log.warn({ error: errorMessage(error) }, 'the undated results could not be counted');
    return { covered: false, why: `the undated results could not be counted: ${errorMessage(error)}` };
  }
  if (outcome.verdict === 'covered') {
    ctx.log.info({ ...outcome }, 'the undated results were counted: every one was read');
    return { covered: true };
  }
  if (outcome.verdict === 'another-order') {
    await setWatermark(ctx.scope, listingKey(resource.name), 'whole');
    ctx.log.warn({ ...outcome }, 'the platform does not list undated results after the dated ones; this organisation is walked whole from now on');
    return { covered: false, why: 'the platform does not list undated results after the dated ones' };
  }
  return { covered: false, why: `the undated results changed while they were read twice (saw ${outcome.seen}, ${outcome.undated ?? '?'} listed)` };
}

/**
 * Groups of the dated count, besides the rest (the open window): runs of closed windows
 * holding about as many results each, so a dated arrival and a dated removal fall in one
 * group about once in this many.
 */
const COUNT_GROUPS = 6;

/**
 * Date ranges with no instant in common under an exclusive or an inclusive reading of
 * the bounds (a millisecond between them), each the days of a run of closed windows that
 * held about as many results as the others (by `windowTotals`; a window not read in this
 * attempt counts as the average).
 */
function countGroups(shape: WindowsShape, windowTotals: ReadonlyMap<string, number>): Array<{ startDate: string; endDate: string }> {
  const windows = shape.windows;
  const known = [...windowTotals.values()];
  const average = known.length === 0 ? 1 : known.reduce((sum, n) => sum + n, 0) / known.length;
  const sizes = windows.map((w) => windowTotals.get(windowKey(w)) ?? average);
  const all = sizes.reduce((sum, n) => sum + n, 0);
  const ranges: Array<{ startDate: string; endDate: string }> = [];
  let first = 0;
  let held = 0;
  for (let i = 0; i < windows.length; i++) {
    held += sizes[i]!;
    const lastWindow = i === windows.length - 1;
    if (!lastWindow && held < (all * (ranges.length + 1)) / COUNT_GROUPS) continue;
    ranges.push({ startDate: fromDay(windows[first]!.start), endDate: new Date(parseDay(windows[i]!.end) - 2).toISOString() });
    first = i + 1;
    if (ranges.length === COUNT_GROUPS) break;
  }
  return ranges;
}

/** The tail read under the rule, counted; read again from its start while the count cannot tell (once). */
async function readTail<T>(
  ctx: JobContext,
  resource: WindowedResource<T>,
  runId: number,
  counts: RunCounts,
  shape: WindowsShape,
  firstLoad: boolean,
  ranges: ReadonlyArray<{ startDate: string; endDate: string }>,
): Promise<TailOutcome> {
  const size = shape.pageSize;
  const signal = ctx.signal;
  const datedRequest = resource.request({ startDate: fromDay(FLOOR_DAY) });
  const groupRequests = ranges.map((range) => resource.request(range));
  const listRequest = resource.request(undefined);
  // Totals are asked for with a page past the end: no records to carry, and no page of results served.
  let listed = 0;
  const totalOf = async (request: ListRequest, known: number, what: string): Promise<number> => {
    const page = await ctx.platform.listPage(resource.endpoint, request, Math.ceil(known / size) + 2, { signal });
    if (page.totalEntities === undefined) throw new PlatformError(`the platform sent no totalEntities for ${what}`, { code: 'MALFORMED_RESPONSE', retryable: true });
    return page.totalEntities;
  };
  // Past the end of the whole list is past the end of its dated part.
  let dated = await totalOf(datedRequest, shape.listTotal, 'the dated results');
  let groups = groupRequests.map(() => shape.listTotal);
  /** The dated count and its groups (the rest by difference), then the list's total once more: the rule takes that total too. */
  const countDated = async (read: ReadBetweenPages): Promise<void> => {
    const [all, ...parts] = await Promise.all([totalOf(datedRequest, dated, 'the dated results'), ...groupRequests.map((request, g) => totalOf(request, groups[g]!, 'a group of the dated results'))]);
    dated = all!;
    groups = parts;
    listed = await totalOf(listRequest, listed, 'the list');
    tail.counted([...parts, dated - parts.reduce((sum, n) => sum + n, 0)], listed);
    read.sawTotal(listed);
  };
  const tail = new UndatedTail(Math.floor(dated / size) * size);
  for (let pass = 1; pass <= 2; pass++) {
    const start = Math.floor(dated / size) * size;
    const walk = await walkResults(ctx, resource, {
      runId,
      request: listRequest,
      counts,
      trackSightings: !firstLoad,
      firstLoad,
      start: { cursor: start, pageSize: size },
      onBatch: async () => {},
      afterPage: async (page, read) => {
        if (page.totalEntities === undefined) return;
        listed = page.totalEntities;
        tail.page(listed, undatedKeys(resource, page));
        // After the first page, after a page whose total moved, and before the read may end:
        // a total that moved since reopens the read.
        for (let n = 0; n < MOST_COUNTS && (tail.wantsCount || (read.complete && !tail.settled)); n++) await countDated(read);
        if (pass === 2 && tail.done) read.stop();
      },
    });
    if (!walk.stopped && walk.verdict.kind !== 'complete') return { verdict: 'unknown', seen: 0 };
    const outcome = tail.judgeNow();
    if (outcome.verdict !== 'unknown' || pass === 2) return tail.finish();
    ctx.log.info({ ...outcome }, 'the undated results changed while they were counted; reading them again from the start of the tail until the count tells');
    tail.confirm();
  }
  return tail.finish();
}

/** The keys of a page's undated records, set-aside ones included when their raw JSON tells. */
function undatedKeys<T>(resource: WindowedResource<T>, page: Page<T>): string[] {
  const keys: string[] = [];
  for (const record of page.records) if (resource.day(record) === null) keys.push(resource.key(record));
  for (const problem of page.problems) {
    const key = resource.rawKey(problem.raw);
    if (key !== undefined && resource.rawDay(problem.raw) === null) keys.push(key);
  }
  return keys;
}

/** Reads the open window until openWindowStep is satisfied; the reason when it is not proven read. */
async function readOpenWindow<T>(ctx: JobContext, resource: WindowedResource<T>, runId: number, counts: RunCounts, openDay: string, firstLoad: boolean): Promise<{ unfinished?: string }> {
  const request = resource.request({ startDate: fromDay(openDay) });
  const reads: WindowRead[] = [];
  for (let step = openWindowStep(reads); ; step = openWindowStep(reads)) {
    if (step.kind !== 'read') {
      ctx.log.info({ reads: reads.length, totals: reads.map((r) => r.totals.at(-1) ?? null), complete: step.kind === 'complete' }, 'the open window was read');
      return step.kind === 'complete' ? {} : { unfinished: step.reason };
    }
    const totals: number[] = [];
    const ids = new Set<string>();
    try {
      const walk = await walkResults(ctx, resource, {
        runId,
        request,
        counts,
        trackSightings: !firstLoad,
        firstLoad,
        onBatch: async () => {},
        afterPage: (page) => {
          totals.push(page.totalEntities ?? -1);
          for (const record of page.records) ids.add(resource.key(record));
          for (const problem of page.problems) {
            const key = resource.rawKey(problem.raw);
            if (key !== undefined) ids.add(key);
          }
        },
      });
      reads.push({ verdict: walk.verdict, totals, ids });
    } catch (error) {
      if (ctx.signal.aborted || !(error instanceof PlatformError) || !error.retryable) throw error;
      ctx.log.warn({ code: error.code }, 'a page of the open window failed after retries; the run goes on and the next run reads the day again');
      return { unfinished: `a page failed: ${errorMessage(error)}` };
    }
  }
}
