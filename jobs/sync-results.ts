import type pg from 'pg';
import type { JobContext } from '../src/context.ts';
import type { Result } from '../src/platform/schemas.ts';
import { normaliseGuid } from '../src/platform/schemas.ts';
import { readAhead } from '../src/platform/read-ahead.ts';
import type { Page, RecordProblem, ResultsQuery } from '../src/platform/types.ts';
import { defineJob, type JobInfo } from '../src/queue/define-job.ts';
import { SYNC_QUEUE } from '../src/queue/names.ts';
import { syncPayloadSchema, type SyncPayload } from '../src/queue/sync-payload.ts';
import { mapConcurrent } from '../src/map-concurrent.ts';
import { markUnseenResultsRemoved, recordSightings, upsertResults } from '../src/warehouse/load-results.ts';
import { addDays, splitWindows, today, windowKey, windowQuery, type ResultWindow } from '../src/warehouse/result-windows.ts';
import { withRetriedTransaction } from '../src/warehouse/retried-transaction.ts';
import { emptyCounts, type SyncSummary } from '../src/warehouse/sync-summary.ts';
import {
  addRunCounts,
  deleteCheckpoints,
  finishRun,
  getCheckpoint,
  getWatermark,
  listCheckpoints,
  quarantineRecords,
  saveCheckpoint,
  setWatermark,
  startRun,
} from '../src/warehouse/sync-state.ts';

/** A window (or the full walk) whose total changes while paged is read again, this many times at most. */
const MAX_READS = 3;
const RESOURCE = 'results';

type Counts = ReturnType<typeof emptyCounts>;
type Ctx = JobContext & { job: JobInfo };

interface Plan {
  mode: 'full' | 'incremental' | 'backfill';
  windows: ResultWindow[];
  /** The watermark to store when the run succeeds (incremental and full only). */
  watermark?: string;
}

/**
 * Results are incremental: each run re-reads a lookback window up to today, split into
 * date windows read concurrently; each window commits a checkpoint with its last rows,
 * so a crash resumes at the first unfinished window. The first run, and `--full`,
 * walk every page instead (undated results included) and checkpoint by page.
 */
export const syncResults = defineJob({
  name: 'sync-results',
  queue: SYNC_QUEUE,
  payload: syncPayloadSchema,
  exclusive: () => 'sync-results',
  async run(payload, ctx): Promise<SyncSummary> {
    const started = Date.now();
    const plan = await planRun(payload, ctx);
    // Checkpoints are scoped to the BullMQ job: its retries and a restart after a crash
    // resume them; a new job starts a fresh plan (idempotent, so never wrong).
    const scope = `results:job:${ctx.job.id}`;
    const runId = await resumeOrStartRun(ctx, scope, plan, payload);
    const counts = emptyCounts();
    try {
      const resumed = plan.mode === 'full' ? await fullWalk(ctx, scope, runId, counts) : await readWindows(ctx, scope, runId, plan.windows, counts);
      await withRetriedTransaction(ctx.pool, async (client) => {
        const removed = plan.mode === 'full' ? await markUnseenResultsRemoved(client, runId) : 0;
        if (plan.watermark) await setWatermark(client, RESOURCE, plan.watermark);
        await deleteCheckpoints(client, `${scope}:`);
        await finishRun(client, runId, { status: 'succeeded', removed });
      });
      // The run's totals, over every attempt of this job (a resumed one included).
      const totals = await ctx.db
        .selectFrom('trainsync.runs')
        .select(['pages', 'inserted', 'updated', 'unchanged', 'quarantined', 'removed'])
        .where('id', '=', runId)
        .executeTakeFirstOrThrow();
      return { resource: RESOURCE, runId, mode: plan.mode, ...totals, durationMs: Date.now() - started, windows: plan.windows.length, windowsResumed: resumed };
    } catch (error) {
      if (!ctx.signal.aborted) {
        await finishRun(ctx.pool, runId, { status: 'failed', error: error instanceof Error ? error.message : String(error) }).catch(() => undefined);
      }
      throw error;
    }
  },
});

async function planRun(payload: SyncPayload, ctx: Ctx): Promise<Plan> {
  const { config } = ctx;
  const runDay = today();
  if (payload.since || payload.until) {
    const since = payload.since ?? config.TRAINSYNC_RESULTS_EPOCH;
    const until = payload.until ?? runDay;
    return { mode: 'backfill', windows: splitWindows(since, addDays(until, 1), config.TRAINSYNC_RESULTS_WINDOW_DAYS) };
  }
  const watermark = await getWatermark(ctx.pool, RESOURCE);
  if (payload.full || !watermark) return { mode: 'full', windows: [], watermark: runDay };
  const from = addDays(watermark < runDay ? watermark : runDay, -config.TRAINSYNC_RESULTS_LOOKBACK);
  return { mode: 'incremental', windows: splitWindows(from, addDays(runDay, 1), config.TRAINSYNC_RESULTS_WINDOW_DAYS), watermark: runDay };
}

async function resumeOrStartRun(ctx: Ctx, scope: string, plan: Plan, payload: SyncPayload): Promise<number> {
  const savedId = asRecord(await getCheckpoint(ctx.pool, `${scope}:run`)).runId;
  if (typeof savedId === 'number') {
    ctx.log.info({ runId: savedId }, 'resuming the run this job started before');
    return savedId;
  }
  return withRetriedTransaction(ctx.pool, async (client) => {
    const runId = await startRun(client, { resource: RESOURCE, mode: plan.mode, params: payload, jobId: ctx.job.id });
    await saveCheckpoint(client, `${scope}:run`, { runId }, runId);
    return runId;
  });
}

/** Reads the windows not yet checkpointed, a bounded number at a time. Returns how many were already done. */
async function readWindows(ctx: Ctx, scope: string, runId: number, windows: ResultWindow[], counts: Counts): Promise<number> {
  const done = new Set((await listCheckpoints(ctx.pool, `${scope}:window:`)).map((key) => key.slice(`${scope}:window:`.length)));
  const todo = windows.filter((window) => !done.has(windowKey(window)));
  const resumed = windows.length - todo.length;
  if (resumed > 0) ctx.log.info({ resumed, remaining: todo.length }, 'skipping windows finished before the restart');
  let windowsDone = resumed;
  await mapConcurrent(todo, ctx.config.TRAINSYNC_RESULTS_CONCURRENCY, async (window) => {
    await readWindow(ctx, scope, runId, window, counts);
    windowsDone += 1;
    ctx.progress({ resource: RESOURCE, pages: counts.pages, rows: counts.inserted + counts.updated + counts.unchanged, windowsDone, windowsTotal: windows.length });
  });
  return resumed;
}

async function readWindow(ctx: Ctx, scope: string, runId: number, window: ResultWindow, counts: Counts): Promise<void> {
  const checkpointKey = `${scope}:window:${windowKey(window)}`;
  for (let read = 1; ; read += 1) {
    const lastRead = read >= MAX_READS;
    const { drifted } = await walk(ctx, runId, windowQuery(window), { startPage: 1 }, counts, async (client, position) => {
      // A window is done when read without drift (or read as often as we allow).
      if (position.done && (!position.drifted || lastRead)) {
        await saveCheckpoint(client, checkpointKey, { window, finishedAt: new Date().toISOString() }, runId);
      }
    });
    if (!drifted) return;
    if (lastRead) {
      ctx.log.warn({ window, reads: read }, 'window kept changing while paged; kept what was read, the next run re-reads it');
      return;
    }
    ctx.log.info({ window, read }, 'window changed while paged; reading it again so nothing shifted past us');
  }
}

/**
 * Walks every page without dates (undated results included), checkpointing the next
 * page with each batch, and records sightings so vanished results can be marked removed.
 * Returns 1 when it resumed a walk a crash had interrupted.
 */
async function fullWalk(ctx: Ctx, scope: string, runId: number, counts: Counts): Promise<number> {
  const key = `${scope}:full`;
  const saved = asRecord(await getCheckpoint(ctx.pool, key));
  if (saved.nextPage === 'done') return 1; // walked to the end before a crash; only the finish was left
  let startPage = typeof saved.nextPage === 'number' ? saved.nextPage : 1;
  let expectedTotal = typeof saved.total === 'number' ? saved.total : undefined;
  const resumed = startPage > 1 ? 1 : 0;
  for (let read = 1; ; read += 1) {
    const { drifted } = await walk(ctx, runId, {}, { startPage, expectedTotal }, counts, async (client, position) => {
      await saveCheckpoint(client, key, { nextPage: position.done ? 'done' : position.nextPage, total: position.total ?? null }, runId);
    }, true);
    // The list changed while paged (or since the walk was interrupted): rows may have
    // shifted between pages, so one more walk from page 1 sees every row that exists.
    if (!drifted) return resumed;
    if (read >= MAX_READS) {
      ctx.log.warn({ reads: read }, 'results kept changing while paged; kept what was read');
      return resumed;
    }
    ctx.log.info({ read, resumedAtPage: startPage }, 'results changed while paged; reading all of them once more');
    startPage = 1;
    expectedTotal = undefined;
  }
}

interface WalkPosition {
  nextPage: number;
  done: boolean;
  drifted: boolean;
  total: number | undefined;
}

/**
 * One paged walk of a query: batches rows into transactions, each of which also
 * commits `onBatch`'s checkpoint for the position reached. Drift means
 * `totalEntities` changed during the walk, or differs from what a resumed walk expected.
 */
async function walk(
  ctx: Ctx,
  runId: number,
  query: ResultsQuery,
  from: { startPage: number; expectedTotal?: number | undefined },
  counts: Counts,
  onBatch: (client: pg.PoolClient, position: WalkPosition) => Promise<void>,
  trackSightings = false,
): Promise<{ drifted: boolean }> {
  let total = from.expectedTotal;
  let drifted = false;
  let rows: Result[] = [];
  let problems: RecordProblem[] = [];
  let lastPage = from.startPage - 1;
  // One batch is written while the next is fetched (double buffering); batches commit
  // in order, so a checkpoint never gets ahead of the rows before it.
  let writing: Promise<void> | undefined;
  let pagesInBatch = 0;
  const write = async (batch: Result[], batchProblems: RecordProblem[], pages: number, position: WalkPosition): Promise<void> => {
    // Counted after commit: a deadlock retry runs the transaction again.
    const outcome = await withRetriedTransaction(ctx.pool, async (client) => {
      const loaded = batch.length > 0 ? await upsertResults(client, batch, { seenAt: new Date(), runId, trackSightings }) : undefined;
      let quarantined = 0;
      if (batchProblems.length > 0) {
        quarantined = await quarantineRecords(client, runId, batchProblems);
        // A result we cannot parse still exists: never mark it removed for that.
        if (trackSightings) await recordSightings(client, runId, problemIds(batchProblems));
      }
      // The run's totals move with the rows, so a run resumed after a crash still adds up.
      await addRunCounts(client, runId, { pages, quarantined, ...loaded });
      await onBatch(client, position);
      return { loaded, quarantined };
    });
    counts.inserted += outcome.loaded?.inserted ?? 0;
    counts.updated += outcome.loaded?.updated ?? 0;
    counts.unchanged += outcome.loaded?.unchanged ?? 0;
    counts.quarantined += outcome.quarantined;
  };
  const flush = async (done: boolean): Promise<void> => {
    const position: WalkPosition = { nextPage: lastPage + 1, done, drifted, total };
    const batch = rows;
    const batchProblems = problems;
    const pages = pagesInBatch;
    rows = [];
    problems = [];
    pagesInBatch = 0;
    if (writing) await writing;
    writing = write(batch, batchProblems, pages, position);
    // Seen by the next flush or the finally below; this keeps Node from calling it unhandled meanwhile.
    writing.catch(() => undefined);
    if (done) await writing;
  };
  // The full walk is one sequence of pages: ask for a few ahead (windows are concurrent already).
  const prefetch = trackSightings ? ctx.config.TRAINSYNC_RESULTS_CONCURRENCY : 1;
  const pages: AsyncIterable<Page<Result>> = ctx.platform.listResults(query, { signal: ctx.signal, startPage: from.startPage, prefetch });
  try {
    for await (const page of readAhead(pages, 2)) {
      counts.pages += 1;
      pagesInBatch += 1;
      lastPage = page.page;
      if (total === undefined) total = page.totalEntities;
      else if (page.totalEntities !== total) drifted = true;
      for (const record of page.records) rows.push(record);
      for (const problem of page.problems) problems.push(problem);
      if (rows.length >= ctx.config.TRAINSYNC_BATCH_ROWS) await flush(false);
      ctx.progress({ resource: RESOURCE, pages: counts.pages, rows: counts.inserted + counts.updated + counts.unchanged + rows.length });
    }
    await flush(true);
  } finally {
    // Never leave a write running behind a failed walk.
    await writing?.catch(() => undefined);
  }
  return { drifted };
}

function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}

function problemIds(problems: readonly RecordProblem[]): string[] {
  const ids: string[] = [];
  for (const problem of problems) {
    const raw = problem.raw;
    if (typeof raw === 'object' && raw !== null && 'id' in raw && typeof raw.id === 'string') {
      const id = normaliseGuid(raw.id);
      if (id) ids.push(id);
    }
  }
  return ids;
}
