import { z } from 'zod';
import type { JobContext } from '../../queue/job-context.ts';
import { errorMessage } from '../../lib/errors.ts';
import { PlatformError } from '../../platform/errors.ts';
import type { ListRequest, Page } from '../../platform/types.ts';
import type { WindowedResource } from '../resources/resource.ts';
import { getCheckpoint, saveCheckpoint, setWatermark } from '../sync-state.ts';
import type { RunCounts } from '../runs-store.ts';
import { addDays, windowKey } from './days.ts';
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
  const closed = await readWindows(ctx, resource, scope, runId, shape.windows, counts, undefined, {
    // As many sequences of pages as the whole walk keeps pages in flight (see full-walk.ts).
    concurrency: concurrency > 1 ? concurrency + 2 : 1,
    trackSightings: !firstLoad,
    firstLoad,
  });
  const unfinished = [...closed.unfinished];
  const missed = new Set(unfinished.map((u) => u.key));
  const finished = shape.windows.map(windowKey).filter((key) => !missed.has(key));

  const undatedKey = `${scope}:undated`;
  let undated = await getCheckpoint(ctx.scope, undatedKey, undatedDoneSchema.optional().catch(undefined));
  if (undated === undefined) {
    undated = await readUndated(ctx, resource, runId, counts, shape, firstLoad);
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
 * result (at most twice); says why not otherwise. A count that shows the list puts undated
 * results elsewhere is remembered, so later walks of this organisation read it whole.
 */
async function readUndated<T>(ctx: JobContext, resource: WindowedResource<T>, runId: number, counts: RunCounts, shape: WindowsShape, firstLoad: boolean): Promise<{ covered: boolean; why?: string }> {
  let last: TailOutcome | undefined;
  for (let attempt = 1; attempt <= 2; attempt += 1) {
    try {
      last = await readUndatedOnce(ctx, resource, runId, counts, shape, firstLoad);
    } catch (error) {
      if (ctx.signal.aborted || !(error instanceof PlatformError) || !(error.retryable || error.status === 400)) throw error;
      ctx.log.warn({ error: errorMessage(error) }, 'the undated results could not be counted');
      return { covered: false, why: `the undated results could not be counted: ${errorMessage(error)}` };
    }
    if (last.verdict === 'covered') {
      ctx.log.info({ ...last, attempt }, 'the undated results were counted: every one was read');
      return { covered: true };
    }
    if (last.verdict === 'another-order') {
      await setWatermark(ctx.scope, listingKey(resource.name), 'whole');
      ctx.log.warn({ ...last }, 'the platform does not list undated results after the dated ones; this organisation is walked whole from now on');
      return { covered: false, why: 'the platform does not list undated results after the dated ones' };
    }
    ctx.log.info({ ...last, attempt }, 'the undated results changed while they were counted; reading them again');
  }
  return { covered: false, why: `the undated results changed while they were read twice (saw ${last?.seen}, ${last?.undated ?? '?'} listed)` };
}

async function readUndatedOnce<T>(ctx: JobContext, resource: WindowedResource<T>, runId: number, counts: RunCounts, shape: WindowsShape, firstLoad: boolean): Promise<TailOutcome> {
  const size = shape.pageSize;
  const signal = ctx.signal;
  const datedRequest = resource.request({ startDate: fromDay(FLOOR_DAY) });
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
  /** The dated count, then the list's total once more: the rule takes that total too. */
  const countDated = async (read: ReadBetweenPages): Promise<void> => {
    dated = await totalOf(datedRequest, dated, 'the dated results');
    listed = await totalOf(listRequest, listed, 'the list');
    tail.counted(dated, listed);
    read.sawTotal(listed);
  };
  const start = Math.floor(dated / size) * size;
  const tail = new UndatedTail(start);
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
    },
  });
  if (walk.verdict.kind !== 'complete') return { verdict: 'unknown', seen: 0 };
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
