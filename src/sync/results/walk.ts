import type { JobContext } from '../../runtime/context.ts';
import { readAhead } from '../../platform/read-ahead.ts';
import { normaliseGuid, type Result } from '../../platform/schemas.ts';
import type { Page, RecordProblem, ResultsQuery } from '../../platform/types.ts';
import { recordSightings, ResultBatch, upsertResultBatch } from '../../warehouse/load-results.ts';
import { addRunCounts, quarantineRecords, type RunCounts } from '../sync-state.ts';
import { withRetriedTransaction, type Tx } from '../../warehouse/transaction.ts';
import { RESULTS } from './plan.ts';

/** A window (or the full walk) whose total changes while paged is read again, this many times at most. */
export const MAX_READS = 3;

export interface WalkPosition {
  nextPage: number;
  done: boolean;
  drifted: boolean;
  total: number | undefined;
}

export interface WalkOptions {
  runId: number;
  query: ResultsQuery;
  startPage: number;
  expectedTotal?: number | undefined;
  /** Counts of this attempt, for progress; the run's totals are recorded with each batch. */
  counts: RunCounts;
  /** Writes the checkpoint for the position reached, in the batch's own transaction. */
  onBatch(tx: Tx, position: WalkPosition): Promise<void>;
  /** Full mode: record every id seen, so vanished results can be marked removed. */
  trackSightings?: boolean;
  /** Stores only the results this accepts (a backfill's days); the rest are read, not stored. */
  keep?: (result: Result) => boolean;
}

/**
 * One paged walk of a query: batches rows into transactions, each of which also
 * commits `onBatch`'s checkpoint for the position reached. Drift means
 * `totalEntities` changed during the walk, or differs from what a resumed walk expected.
 */
export async function walkResults(ctx: JobContext, options: WalkOptions): Promise<{ drifted: boolean }> {
  const { runId, counts, trackSightings = false, keep } = options;
  let total = options.expectedTotal;
  let drifted = false;
  // Rows go into their batch's COPY text as each page arrives (see ResultBatch).
  let rows = new ResultBatch();
  let problems: RecordProblem[] = [];
  let lastPage = options.startPage - 1;
  // One batch is written while the next is fetched (double buffering); batches commit
  // in order, so a checkpoint never gets ahead of the rows before it.
  let writing: Promise<void> | undefined;
  let pagesInBatch = 0;
  const write = async (batch: ResultBatch, batchProblems: RecordProblem[], pages: number, position: WalkPosition): Promise<void> => {
    // Counted after commit: a deadlock retry runs the transaction again.
    const outcome = await withRetriedTransaction(ctx.withPgClient, async (tx) => {
      const loaded = batch.size > 0 ? await upsertResultBatch(tx.client, batch, { seenAt: new Date(), runId, trackSightings }) : undefined;
      let quarantined = 0;
      if (batchProblems.length > 0) {
        quarantined = await quarantineRecords(tx.db, runId, batchProblems);
        // A result we cannot parse still exists: never mark it removed for that.
        if (trackSightings) await recordSightings(tx.client, runId, problemIds(batchProblems));
      }
      // The run's totals move with the rows, so a run resumed after a crash still adds up.
      // Quarantined records are counted once, when the run finishes: a window read
      // again meets the same records again.
      await addRunCounts(tx.db, runId, { pages, ...loaded });
      await options.onBatch(tx, position);
      return { loaded, quarantined };
    });
    // Written for good: its buffer can serve a later batch.
    batch.release();
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
    rows = new ResultBatch();
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
  const pages: AsyncIterable<Page<Result>> = ctx.platform.listResults(options.query, { signal: ctx.signal, startPage: options.startPage, prefetch });
  try {
    for await (const page of readAhead(pages, 2)) {
      counts.pages += 1;
      pagesInBatch += 1;
      lastPage = page.page;
      if (total === undefined) total = page.totalEntities;
      else if (page.totalEntities !== total) drifted = true;
      for (const record of page.records) if (!keep || keep(record)) rows.add(record);
      for (const problem of page.problems) problems.push(problem);
      if (rows.size >= ctx.config.TRAINSYNC_BATCH_ROWS) await flush(false);
      ctx.progress({ resource: RESULTS, pages: counts.pages, rows: counts.inserted + counts.updated + counts.unchanged + rows.size });
    }
    await flush(true);
  } finally {
    // Never leave a write running behind a failed walk.
    await writing?.catch(() => undefined);
  }
  return { drifted };
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
