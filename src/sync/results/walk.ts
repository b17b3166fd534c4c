import type { JobContext } from '../../runtime/context.ts';
import { readAhead } from '../../platform/read-ahead.ts';
import { normaliseGuid, type Result } from '../../platform/schemas.ts';
import type { Page, RecordProblem, ResultsQuery } from '../../platform/types.ts';
import { recordSightings, ResultBatch, upsertResultBatch } from '../../warehouse/load-results.ts';
import { addRunCounts, quarantineRecords, type RunCounts } from '../sync-state.ts';
import { CommitOrder } from '../../warehouse/commit-order.ts';
import type { Tx } from '../../warehouse/transaction.ts';
import { GapWatch, type WalkGap } from './gaps.ts';
import { RESULTS } from './plan.ts';

/** A window, or the pages of the full walk, that may have a gap is read this many times at most. */
export const MAX_READS = 3;

export interface WalkPosition {
  nextPage: number;
  done: boolean;
  /** A possible gap seen so far (at `done`: of the whole read; see gaps.ts). */
  gap: WalkGap | undefined;
  total: number | undefined;
}

export interface WalkReport {
  gap: WalkGap | undefined;
  /** The last totalEntities seen. */
  total: number | undefined;
}

export interface WalkOptions {
  runId: number;
  query: ResultsQuery;
  startPage: number;
  /** The last page to read (a re-read of a page range); default: to the end of the list. */
  endPage?: number | undefined;
  expectedTotal?: number | undefined;
  /** A gap found before a restart (from the checkpoint), still to be read again. */
  knownGap?: WalkGap | undefined;
  /** Counts of this attempt, for progress; the run's totals are recorded with each batch. */
  counts: RunCounts;
  /** Writes the checkpoint for the position reached, in the batch's own transaction. */
  onBatch(tx: Tx, position: WalkPosition): Promise<void>;
  /** Full mode: record every id seen, so vanished results can be marked removed. */
  trackSightings?: boolean;
  /** A first load into an empty table: rows are written by plain inserts while none exists (see `fresh`). */
  firstLoad?: boolean;
  /**
   * Pages requested ahead of the one being read (default 1: windows are read several at
   * a time already). The full walk is one sequence of pages and asks for more.
   */
  prefetch?: number | undefined;
  /** Stores only the results this accepts (a backfill's days); the rest are read, not stored. */
  keep?: (result: Result) => boolean;
}

/**
 * One paged walk of a query: batches rows into transactions, each of which also
 * commits `onBatch`'s checkpoint for the position reached, and reports a possible gap
 * (gaps.ts): only a removal behind the reader, or ids that do not account for
 * the total, make one; results arriving while it pages do not.
 */
export async function walkResults(ctx: JobContext, options: WalkOptions): Promise<WalkReport> {
  const { runId, counts, trackSightings = false, firstLoad = false, keep } = options;
  const watch = new GapWatch(options.startPage, options.expectedTotal, options.knownGap);
  let finalGap: WalkGap | undefined;
  // Rows go into their batch's COPY text as each page arrives (see ResultBatch).
  let rows = new ResultBatch();
  let problems: RecordProblem[] = [];
  let lastPage = options.startPage - 1;
  // Batches are written while the next is fetched, up to TRAINSYNC_RESULTS_WRITERS at
  // once, each on a connection of its own; they commit in order (CommitOrder), so a
  // checkpoint never gets ahead of the rows before it.
  const order = new CommitOrder(ctx.withPgClient, { synchronousCommit: false });
  const writing = new Set<Promise<void>>();
  const failures: unknown[] = [];
  let pagesInBatch = 0;
  const write = async (batch: ResultBatch, batchProblems: RecordProblem[], pages: number, position: WalkPosition): Promise<void> => {
    // Counted after commit: a deadlock retry runs the transaction again.
    const outcome = await order.run(
      async (tx) => {
        const loaded = batch.size > 0 ? await upsertResultBatch(tx.client, batch, { org: ctx.org.slug, seenAt: new Date(), runId, trackSightings, fresh: firstLoad }) : undefined;
        let quarantined = 0;
        if (batchProblems.length > 0) {
          quarantined = await quarantineRecords(tx.db, ctx.org.slug, runId, batchProblems);
          // A result we cannot parse still exists: never mark it removed for that.
          if (trackSightings) await recordSightings(tx.client, ctx.org.slug, runId, problemIds(batchProblems));
        }
        return { loaded, quarantined };
      },
      async (tx, written) => {
        // The run's totals move with the rows, so a run resumed after a crash still adds up.
        // Quarantined records are counted once, when the run finishes: a window read
        // again meets the same records again.
        await addRunCounts(tx.db, runId, { pages, ...written.loaded });
        await options.onBatch(tx, position);
        return written;
      },
    );
    // Written for good: its buffer can serve a later batch.
    batch.release();
    counts.inserted += outcome.loaded?.inserted ?? 0;
    counts.updated += outcome.loaded?.updated ?? 0;
    counts.unchanged += outcome.loaded?.unchanged ?? 0;
    counts.quarantined += outcome.quarantined;
  };
  const flush = async (done: boolean): Promise<void> => {
    const position: WalkPosition = { nextPage: lastPage + 1, done, gap: done ? finalGap : watch.soFar(), total: watch.total };
    const batch = rows;
    const batchProblems = problems;
    const pages = pagesInBatch;
    rows = new ResultBatch();
    problems = [];
    pagesInBatch = 0;
    while (writing.size >= ctx.config.TRAINSYNC_RESULTS_WRITERS && failures.length === 0) await Promise.race(writing).catch(() => undefined);
    if (failures.length > 0) throw failures[0];
    const written = write(batch, batchProblems, pages, position);
    writing.add(written);
    // Kept until the walk sees it (here or in the finally below), so no failure is lost.
    written.then(
      () => writing.delete(written),
      (error: unknown) => {
        writing.delete(written);
        failures.push(error);
      },
    );
    if (done) {
      await Promise.allSettled(writing);
      if (failures.length > 0) throw failures[0];
    }
  };
  const { endPage } = options;
  const prefetch = Math.min(options.prefetch ?? 1, endPage === undefined ? Infinity : endPage - options.startPage);
  const pages: AsyncIterable<Page<Result>> = ctx.platform.listResults(options.query, {
    signal: ctx.signal,
    startPage: options.startPage,
    prefetch,
    ...(endPage === undefined ? {} : { endPage }),
  });
  try {
    for await (const page of readAhead(pages, endPage === undefined ? 2 : 1)) {
      counts.pages += 1;
      pagesInBatch += 1;
      lastPage = page.page;
      watch.page(page.page, page.timing, page.totalEntities, pageIds(page));
      for (const record of page.records) if (!keep || keep(record)) rows.add(record);
      for (const problem of page.problems) problems.push(problem);
      if (rows.size >= ctx.config.TRAINSYNC_BATCH_ROWS) await flush(false);
      ctx.progress({ resource: RESULTS, pages: counts.pages, rows: counts.inserted + counts.updated + counts.unchanged + rows.size });
    }
    finalGap = watch.end(endPage === undefined);
    await flush(true);
  } finally {
    // Never leave a write running behind a failed walk.
    await Promise.allSettled(writing);
  }
  return { gap: finalGap, total: watch.total };
}

/** The id of each record of a page, valid or not (undefined when unreadable). */
function pageIds(page: Page<Result>): Array<string | undefined> {
  const ids: Array<string | undefined> = page.records.map((record) => record.id);
  for (const problem of page.problems) ids.push(problemIds([problem])[0]);
  return ids;
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
