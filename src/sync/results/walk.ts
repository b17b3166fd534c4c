import type { JobContext } from '../../queue/job-context.ts';
import { normaliseGuid, type Result } from '../../platform/schemas.ts';
import type { Page, RecordProblem, ResultsQuery } from '../../platform/types.ts';
import { recordSightings, ResultBatch, upsertResultBatch } from '../../warehouse/load-results.ts';
import { addRunCounts, quarantineRecords, type RunCounts } from '../sync-state.ts';
import { CommitOrder } from '../../warehouse/commit-order.ts';
import type { Tx } from '../../warehouse/transaction.ts';
import { CompletenessRule, type ReadCheckpoint, type Verdict } from './completeness.ts';
import { RESULTS } from './plan.ts';

export interface WalkPosition {
  /** The rule's verdict: `reading` until the last batch. */
  verdict: Verdict;
  /** Where a restart resumes from; true of every row committed with it. */
  read: ReadCheckpoint | undefined;
}

export interface WalkReport {
  verdict: Exclude<Verdict, { kind: 'reading' }>;
}

export interface WalkOptions {
  runId: number;
  query: ResultsQuery;
  /** A read interrupted by a restart, from its checkpoint. */
  resume?: ReadCheckpoint | undefined;
  /** Counts of this attempt, for progress; the run's totals are recorded with each batch. */
  counts: RunCounts;
  /** Writes the checkpoint for the position reached, in the batch's own transaction. */
  onBatch(tx: Tx, position: WalkPosition): Promise<void>;
  /** Full mode: record every id seen, so vanished results can be marked removed. */
  trackSightings?: boolean;
  /** A first load into an empty table: rows are written by plain inserts while none exists (see `fresh`). */
  firstLoad?: boolean;
  /**
   * Pages kept in flight while the list is quiet (default 1: one page at a time;
   * windows are read several at a time already). The full walk is one sequence of
   * pages and asks for more; the rule (completeness.ts) decides when it may.
   */
  readAhead?: number | undefined;
  /** Stores only the results this accepts (a backfill's days); the rest are read, not stored. */
  keep?: (result: Result) => boolean;
}

type Arrival = { page: number; answer: Page<Result> } | { page: number; error: unknown };

/**
 * One paged read of a query until the completeness rule (completeness.ts) says every
 * result listed throughout the read was read, or that it cannot say so: the rule
 * chooses each page to ask for (read ahead while the list is quiet, one at a time once
 * it changed, back over pages a removal shifted results onto). Rows are batched into
 * transactions, each of which also commits `onBatch`'s checkpoint: the rule's state as
 * of the pages in it.
 */
export async function walkResults(ctx: JobContext, options: WalkOptions): Promise<WalkReport> {
  const { runId, counts, trackSightings = false, firstLoad = false, keep } = options;
  const rule = new CompletenessRule({ readAhead: options.readAhead ?? 1, resume: options.resume });
  // Rows go into their batch's COPY text as each page arrives (see ResultBatch).
  let rows = new ResultBatch();
  let problems: RecordProblem[] = [];
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
        // Quarantined records are counted once, when the run finishes: a page read
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
    const position: WalkPosition = { verdict: rule.state, read: rule.checkpoint() };
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

  // Answers in the order they arrive: the rule reasons about that order.
  const arrived: Arrival[] = [];
  const asked = new Set<Promise<void>>();
  let wake: (() => void) | undefined;
  const ask = (): void => {
    for (let page = rule.ask(); page !== undefined; page = rule.ask()) {
      const pageNo = page;
      const request = ctx.platform.getResultsPage(options.query, pageNo, { signal: ctx.signal }).then(
        (answer) => {
          arrived.push({ page: pageNo, answer });
        },
        (error: unknown) => {
          arrived.push({ page: pageNo, error });
        },
      );
      const tracked = request.finally(() => {
        asked.delete(tracked);
        wake?.();
      });
      asked.add(tracked);
    }
  };
  try {
    for (;;) {
      if (rule.state.kind === 'reading') ask();
      if (arrived.length === 0) {
        if (asked.size === 0) break;
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
        continue;
      }
      const arrival = arrived.shift()!;
      if ('error' in arrival) {
        // A page asked ahead that failed after the rule had decided is not needed.
        if (rule.state.kind !== 'reading') continue;
        throw arrival.error;
      }
      const page = arrival.answer;
      rule.answered(arrival.page, page.totalEntities, page.records.length + page.problems.length);
      counts.pages += 1;
      pagesInBatch += 1;
      for (const record of page.records) if (!keep || keep(record)) rows.add(record);
      for (const problem of page.problems) problems.push(problem);
      if (rows.size >= ctx.config.TRAINSYNC_BATCH_ROWS) await flush(false);
      ctx.progress({ resource: RESULTS, pages: counts.pages, rows: counts.inserted + counts.updated + counts.unchanged + rows.size });
    }
    await flush(true);
  } finally {
    // Never leave a request or a write running behind a failed walk.
    await Promise.allSettled([...asked, ...writing]);
  }
  const verdict = rule.state;
  if (verdict.kind === 'reading') throw new Error('the results walk stopped before the completeness rule decided');
  return { verdict };
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
