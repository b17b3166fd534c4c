import type { JobContext } from '../../queue/job-context.ts';
import type { ListRequest, Page, RecordProblem } from '../../platform/types.ts';
import { recordSightings, StagedBatch, upsertStagedBatch } from '../../warehouse/load-staged.ts';
import type { WindowedResource } from '../resources/resource.ts';
import { quarantineRecords } from '../sync-state.ts';
import { addRunCounts, type RunCounts } from '../runs-store.ts';
import { CommitOrder } from '../../warehouse/commit-order.ts';
import type { OrgTx } from '../../warehouse/scope.ts';
import { CompletenessRule, type ReadCheckpoint, type Verdict } from './completeness.ts';

export interface WalkPosition {
  /** The rule's verdict: `reading` until the last batch. */
  verdict: Verdict;
  /** Where a restart resumes from; true of every row committed with it. */
  read: ReadCheckpoint | undefined;
}

export interface WalkReport {
  verdict: Exclude<Verdict, { kind: 'reading' }>;
  /** The caller stopped the read between pages (ReadBetweenPages.stop) before the rule decided. */
  stopped?: true;
  /** The list's total as the rule last knew it. */
  total?: number | undefined;
}

export interface WalkOptions<T> {
  runId: number;
  /** The list's request (a window's bounds, or none). */
  request: ListRequest;
  /** A read interrupted by a restart, from its checkpoint. */
  resume?: ReadCheckpoint | undefined;
  /** Counts of this attempt, for progress; the run's totals are recorded with each batch. */
  counts: RunCounts;
  /** Writes the checkpoint for the position reached, in the batch's own transaction. */
  onBatch(tx: OrgTx, position: WalkPosition): Promise<void>;
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
  keep?: ((record: T) => boolean) | undefined;
  /** Page 1 of this request, already answered (it decided how to read the list): used instead of asking again. */
  firstPage?: Page<T> | undefined;
  /** A read of the list's tail: every result below `cursor` is read already (see CompletenessRule's `start`). */
  start?: { cursor: number; pageSize: number } | undefined;
  /**
   * Told of each page as it is answered (after the rule), and waited for before the
   * next page is asked: a read one page at a time can ask something else in between,
   * and tell the rule a total it saw there (CompletenessRule.totalSeen).
   */
  afterPage?: ((page: Page<T>, read: ReadBetweenPages) => Promise<void> | void) | undefined;
}

/** What a read one page at a time offers between two pages. */
export interface ReadBetweenPages {
  /** The rule has found every result read (so far). */
  readonly complete: boolean;
  /** A total of the same list seen between pages: the rule takes it as it takes a page's. */
  sawTotal(total: number): void;
  /** Asks for no more pages: the read ends once the rows read are written (the caller proves what it read by other means). */
  stop(): void;
}

/**
 * Rows held this long while the walk waits for pages, and no batch is being written, are
 * written then: a walk paced by the request budget (500 results a second at the default)
 * otherwise ends by writing up to TRAINSYNC_BATCH_ROWS rows after its last page (0.2–0.6 s
 * of a 10,000-result first load, docs/benchmarks.md). A walk whose pages come faster fills
 * its batches long before.
 */
const IDLE_FLUSH_MS = 500;

type Arrival<T> = { page: number; answer: Page<T> } | { page: number; error: unknown };

/**
 * One paged read of a query until the completeness rule (completeness.ts) says every
 * result listed throughout the read was read, or that it cannot say so: the rule
 * chooses each page to ask for (read ahead while the list is quiet, one at a time once
 * it changed, back over pages a removal shifted results onto). Rows are batched into
 * transactions, each of which also commits `onBatch`'s checkpoint: the rule's state as
 * of the pages in it.
 */
export async function walkResults<T>(ctx: JobContext, resource: WindowedResource<T>, options: WalkOptions<T>): Promise<WalkReport> {
  const { runId, counts, trackSightings = false, firstLoad = false, keep } = options;
  const rule = new CompletenessRule({ readAhead: options.readAhead ?? 1, resume: options.resume, start: options.start });
  // Rows go into their batch's COPY text as each page arrives (see StagedBatch).
  let rows = new StagedBatch(resource.table);
  let problems: RecordProblem[] = [];
  // Batches are written while the next is fetched, up to TRAINSYNC_RESULTS_WRITERS at
  // once, each on a connection of its own; they commit in order (CommitOrder), so a
  // checkpoint never gets ahead of the rows before it.
  const order = new CommitOrder(ctx.scope, { synchronousCommit: false });
  const writing = new Set<Promise<void>>();
  const failures: unknown[] = [];
  let pagesInBatch = 0;
  let batchOpenedAt = performance.now();
  const write = async (batch: StagedBatch<T>, batchProblems: RecordProblem[], pages: number, position: WalkPosition, last: boolean): Promise<void> => {
    // Counted after commit: a deadlock retry runs the transaction again.
    const outcome = await order.run(
      async (tx) => {
        const loaded = batch.size > 0 ? await upsertStagedBatch(tx, batch, { seenAt: new Date(), runId, trackSightings, fresh: firstLoad }) : undefined;
        let quarantined = 0;
        if (batchProblems.length > 0) {
          quarantined = await quarantineRecords(tx, runId, batchProblems);
          // A result we cannot parse still exists: never mark it removed for that.
          if (trackSightings) await recordSightings(tx, resource.table, runId, problemKeys(resource, batchProblems));
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
      // The walk's closing batch: no batch comes after it to wait for its commit.
      { last },
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
    rows = new StagedBatch(resource.table);
    problems = [];
    pagesInBatch = 0;
    batchOpenedAt = performance.now();
    while (writing.size >= ctx.config.TRAINSYNC_RESULTS_WRITERS && failures.length === 0) await Promise.race(writing).catch(() => undefined);
    if (failures.length > 0) throw failures[0];
    const written = write(batch, batchProblems, pages, position, done);
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
  const arrived: Arrival<T>[] = [];
  const asked = new Set<Promise<void>>();
  let wake: (() => void) | undefined;
  let firstPage = options.firstPage;
  let stopped = false;
  const ask = (): void => {
    for (let page = rule.ask(); page !== undefined; page = rule.ask()) {
      const pageNo = page;
      const answered = pageNo === 1 && firstPage !== undefined ? Promise.resolve(firstPage) : ctx.platform.listPage(resource.endpoint, options.request, pageNo, { signal: ctx.signal });
      if (pageNo === 1) firstPage = undefined;
      const request = answered.then(
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
      if (rule.state.kind === 'reading' && !stopped) ask();
      if (arrived.length === 0) {
        if (asked.size === 0) break;
        if (rows.size > 0 && writing.size === 0 && performance.now() - batchOpenedAt >= IDLE_FLUSH_MS) {
          await flush(false);
          // A page may have arrived meanwhile (its wake had no one to call): look again.
          continue;
        }
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
      rows.addAll(page.records, keep);
      if (page.problems.length > 0) problems.push(...page.problems);
      if (rows.size >= ctx.config.TRAINSYNC_BATCH_ROWS) await flush(false);
      if (options.afterPage) {
        await options.afterPage(page, {
          get complete() {
            return rule.state.kind === 'complete';
          },
          sawTotal: (total) => void rule.totalSeen(total),
          stop: () => {
            stopped = true;
          },
        });
      }
      ctx.progress({ resource: resource.name, pages: counts.pages, rows: counts.inserted + counts.updated + counts.unchanged + rows.size });
    }
    await flush(true);
  } finally {
    // Never leave a request or a write running behind a failed walk.
    await Promise.allSettled([...asked, ...writing]);
  }
  const verdict = rule.state;
  const total = rule.checkpoint()?.total;
  if (verdict.kind === 'reading' && stopped) return { verdict: { kind: 'incomplete', reason: 'stopped between pages by its caller' }, stopped: true, total };
  if (verdict.kind === 'reading') throw new Error(`the ${resource.name} walk stopped before the completeness rule decided`);
  return { verdict, total };
}

/** The keys of records set aside that have a readable one. */
function problemKeys<T>(resource: WindowedResource<T>, problems: readonly RecordProblem[]): string[] {
  const keys: string[] = [];
  for (const problem of problems) {
    const key = resource.rawKey(problem.raw);
    if (key) keys.push(key);
  }
  return keys;
}
