/**
 * When a paged read of a list that changes while it is read has read every result that
 * was listed throughout the read. docs/completeness.md states the rule and its argument;
 * this file is that rule and nothing else: no I/O, no clock but the order of calls, so
 * it can be driven by a generated model (test/completeness-model.test.ts) as well as by
 * the walk (walk.ts).
 *
 * Terms. The platform serves each page from the list as it is at one instant, the
 * page's *service*; a page `p` holds positions [(p-1)·S, (p-1)·S + size) of that list,
 * and its `totalEntities` is the list's length then. The *cursor* c is a position such
 * that every result at a position below c in the current list, and listed since the
 * read began, has been read. Between two services in a row the list may change:
 *
 * - arrivals only: positions only grow, so c stays true (a result that was below c is
 *   still read; the one that moved above c was read already or is new);
 * - removals only: positions fall by at most the number removed, so c falls by the
 *   drop in the total (exactly the removals);
 * - nothing: the total is the same and the list is the same, so pages served on either
 *   side of the interval belong to one list and their positions join up with c.
 *
 * Assumption (the residual risk, stated in the docs): no interval between two services
 * holds both a removal and an arrival, so the change of the total shows the removals.
 *
 * Pages read one at a time are served in the order they are asked. Pages read ahead are
 * in flight together and may be served in any order; a page read ahead counts only when
 * every page that may have been served before it showed the same total as the list the
 * phase began with: then (under the assumption) none of them saw a change. As soon as one
 * shows another total, the rule stops reading ahead, lets the pages in flight land, counts
 * none of the uncertain ones, and lowers c by the most the uncertain totals can hide.
 */

/** What the rule knows when a read resumes after a restart (kept in the checkpoint). */
export interface ReadCheckpoint {
  cursor: number;
  /** The total of the list the cursor is true of. */
  total: number;
  pageSize: number;
  /** Pages answered so far, for the cap on re-reads. */
  reads: number;
  /** Totals seen while pages in flight were uncertain: settled by the next answer. */
  uncertain?: number[] | undefined;
}

export interface RuleOptions {
  /** Pages kept in flight when the list is quiet (0 or 1: one page at a time). */
  readAhead: number;
  /**
   * Unchanged answers in a row, read one at a time, before reading ahead again after a
   * change. A list that changes often is read one page at a time: there a change costs
   * nothing, where ahead of the reader it costs the pages that were in flight.
   */
  quietBeforeReadAhead?: number;
  /** Reads allowed: this many times the pages of the list, plus `extraReads`. */
  readsPerPage?: number;
  extraReads?: number;
  resume?: ReadCheckpoint | undefined;
  /**
   * A read that starts part-way down the list: every result below `cursor` is known
   * read already (the tail of a list whose head other reads covered; the caller proves
   * that part, see undated-tail.ts). `pageSize` places the cursor on a page.
   */
  start?: { cursor: number; pageSize: number } | undefined;
}

export type Verdict = { kind: 'reading' } | { kind: 'complete' } | { kind: 'incomplete'; reason: string };

interface Pending {
  page: number;
  size: number;
  received: number;
}

const DEFAULT_QUIET = 200;

/**
 * The most removals a sequence of totals can hide when the order of the middle ones is
 * unknown: every fall ends at one of them or at the last, and is at most the largest
 * total less that one.
 */
export function mostRemovals(from: number, middle: readonly number[], to: number): number {
  const largest = Math.max(from, to, ...middle);
  let sum = largest - to;
  for (const total of middle) sum += largest - total;
  return sum;
}

export class CompletenessRule {
  private readonly readAhead: number;
  private readonly quietBeforeReadAhead: number;
  private readonly readsPerPage: number;
  private readonly extraReads: number;
  private pageSize: number;
  private cursor: number;
  private total: number | undefined;
  /** Pages of the current list read beyond the cursor: page → records. */
  private readonly covered = new Map<number, number>();
  private ahead = false;
  /** Answers in a row, read one at a time, that showed no change. */
  private quiet = 0;
  private clock = 0;
  private readonly inFlight = new Map<number, number>();
  private pending: Pending[] = [];
  /** Totals of answers that may have been served after a change; undefined: none. */
  private uncertain: number[] | undefined;
  private reads: number;
  /** Answers this instance has taken (a resumed read starts again at 0). */
  private answers = 0;
  private largestTotal = 0;
  private verdict: Verdict = { kind: 'reading' };

  constructor(options: RuleOptions) {
    this.readAhead = Math.max(1, Math.floor(options.readAhead));
    this.quietBeforeReadAhead = options.quietBeforeReadAhead ?? DEFAULT_QUIET;
    this.readsPerPage = options.readsPerPage ?? 3;
    this.extraReads = options.extraReads ?? 4;
    const resume = options.resume;
    this.pageSize = resume?.pageSize ?? options.start?.pageSize ?? 0;
    this.cursor = resume?.cursor ?? options.start?.cursor ?? 0;
    this.total = resume?.total;
    this.reads = resume?.reads ?? 0;
    this.largestTotal = resume?.total ?? 0;
    if (resume?.uncertain !== undefined) this.uncertain = [...resume.uncertain];
  }

  /** The page to ask for now, recorded as sent; undefined: wait for an answer (or the read is over). */
  ask(): number | undefined {
    if (this.verdict.kind !== 'reading') return undefined;
    if (this.ahead) {
      if (this.uncertain !== undefined || this.inFlight.size >= this.readAhead) return undefined;
    } else if (this.inFlight.size > 0) {
      return undefined;
    }
    const page = this.nextUnread();
    if (page === undefined) return undefined;
    this.inFlight.set(page, ++this.clock);
    return page;
  }

  /** Pages asked for and not yet answered. */
  get waiting(): number {
    return this.inFlight.size;
  }

  /**
   * An answer, in the order answers arrive: its page, `totalEntities` (undefined when
   * the platform did not say) and how many records it held (valid or not).
   */
  answered(page: number, total: number | undefined, size: number): Verdict {
    const sent = this.inFlight.get(page);
    if (sent === undefined) throw new Error(`page ${page} was answered but not asked for`);
    this.inFlight.delete(page);
    const received = ++this.clock;
    this.reads += 1;
    this.answers += 1;
    if (this.verdict.kind !== 'reading') return this.verdict;
    if (total === undefined) return this.finish({ kind: 'incomplete', reason: 'the platform sent no totalEntities, so a result removed while paging cannot be noticed' });
    this.largestTotal = Math.max(this.largestTotal, total);
    if (this.pageSize === 0 && size < total) this.pageSize = size;
    if (this.pageSize > 0 && size > this.pageSize) {
      return this.finish({ kind: 'incomplete', reason: `page ${page} held ${size} results where earlier pages held ${this.pageSize}: the page size changed while paging` });
    }
    if (this.ahead) this.answeredAhead(page, total, size, received);
    else this.answeredInTurn(page, total, size);
    return this.judge();
  }

  /**
   * A total seen between pages, one page at a time (a page past the end asked for its
   * total alone): a service like a page that covers no position. A change it shows moves
   * the cursor as a page's would, and a read the rule had called complete reads on when
   * the list now holds more than the cursor.
   */
  totalSeen(total: number): Verdict {
    if (this.ahead || this.inFlight.size > 0 || this.uncertain !== undefined) throw new Error('a total is taken between pages only when reading one page at a time');
    if (this.verdict.kind === 'incomplete') return this.verdict;
    // Not a page: it does not count toward the cap on pages read.
    this.largestTotal = Math.max(this.largestTotal, total);
    if (this.total === undefined) {
      this.total = total;
    } else if (total !== this.total) {
      if (total < this.total) this.cursor = Math.max(0, this.cursor - (this.total - total));
      this.newList(total);
    }
    if (this.verdict.kind === 'complete' && this.cursor < total) this.verdict = { kind: 'reading' };
    return this.judge();
  }

  /** The state to resume from after a restart; true of every result whose rows were handed over so far. */
  checkpoint(): ReadCheckpoint | undefined {
    if (this.total === undefined) return undefined;
    const uncertain = this.uncertain ?? (this.pending.length > 0 ? this.pending.map(() => this.total!) : undefined);
    return { cursor: this.cursor, total: this.total, pageSize: this.pageSize, reads: this.reads, ...(uncertain ? { uncertain } : {}) };
  }

  get state(): Verdict {
    return this.verdict;
  }

  /** One page at a time: each answer is served after the one before. */
  private answeredInTurn(page: number, total: number, size: number): void {
    if (this.uncertain !== undefined) {
      // The first answer after uncertain ones: lower c by the most they can hide.
      this.cursor = Math.max(0, this.cursor - mostRemovals(this.total ?? total, this.uncertain, total));
      this.uncertain = undefined;
      this.newList(total);
    } else if (this.total === undefined) {
      this.total = total;
    } else if (total !== this.total) {
      if (total < this.total) this.cursor = Math.max(0, this.cursor - (this.total - total));
      this.newList(total);
    } else {
      this.quiet += 1;
    }
    this.covered.set(page, size);
    this.advance();
    // Read ahead again once the list has been quiet (at once after the first answer).
    if (this.readAhead > 1 && (this.answers === 1 || this.quiet >= this.quietBeforeReadAhead)) this.ahead = true;
  }

  private answeredAhead(page: number, total: number, size: number, received: number): void {
    if (this.uncertain === undefined && total === this.total) {
      this.pending.push({ page, size, received });
      // Counted once every page asked before it arrived has arrived, all with this total.
      const earliestInFlight = Math.min(...this.inFlight.values());
      const ready = this.pending.filter((p) => p.received < earliestInFlight);
      this.pending = this.pending.filter((p) => p.received >= earliestInFlight);
      for (const p of ready) this.covered.set(p.page, p.size);
      this.advance();
    } else {
      // A change while pages were in flight: none of those not yet counted can be placed.
      this.uncertain ??= this.pending.map(() => this.total!);
      this.pending = [];
      this.uncertain.push(total);
      this.largestTotal = Math.max(this.largestTotal, total);
    }
    if (this.uncertain !== undefined && this.inFlight.size === 0) {
      // Landed: read one page at a time until the list is quiet again.
      this.ahead = false;
      this.quiet = 0;
    }
  }

  /** A different list from here on: pages read beyond the cursor were of the old one. */
  private newList(total: number): void {
    this.total = total;
    this.covered.clear();
    this.quiet = 0;
  }

  /** Moves the cursor over pages of the current list that join it. */
  private advance(): void {
    const size = this.pageSize;
    for (;;) {
      if (size === 0) {
        // Only one page seen so far, and it held the whole list (or nothing).
        const first = this.covered.get(1);
        if (first !== undefined && this.cursor === 0) this.cursor = Math.max(this.cursor, first);
        return;
      }
      const page = Math.floor(this.cursor / size) + 1;
      const held = this.covered.get(page);
      if (held === undefined) return;
      const end = (page - 1) * size + held;
      if (end <= this.cursor) return;
      this.cursor = end;
      this.covered.delete(page);
    }
  }

  /** The first page from the cursor on that is neither read nor asked for, if the list can hold it. */
  private nextUnread(): number | undefined {
    const size = this.pageSize;
    if (this.total === undefined || size === 0) return this.inFlight.size > 0 ? undefined : this.resumePage();
    const last = Math.max(1, Math.ceil(this.total / size));
    for (let page = Math.floor(this.cursor / size) + 1; page <= last; page += 1) {
      if (this.covered.has(page) || this.inFlight.has(page) || this.pending.some((p) => p.page === page)) continue;
      return page;
    }
    // Every page the total allows is read or in flight; an emptied list is asked for page 1.
    return this.inFlight.size === 0 && this.cursor < this.total ? Math.floor(this.cursor / size) + 1 : undefined;
  }

  private resumePage(): number {
    return this.pageSize > 0 ? Math.floor(this.cursor / this.pageSize) + 1 : 1;
  }

  private judge(): Verdict {
    if (this.uncertain === undefined && this.total !== undefined && this.cursor >= this.total) return this.finish({ kind: 'complete' });
    const pages = this.pageSize > 0 ? Math.max(1, Math.ceil(this.largestTotal / this.pageSize)) : 1;
    if (this.reads >= this.readsPerPage * pages + this.extraReads && this.inFlight.size === 0) {
      return this.finish({
        kind: 'incomplete',
        reason: `the list kept changing behind the reader: ${this.reads} pages read where it holds ${pages}, and the results from position ${this.cursor + 1} of ${this.total ?? '?'} on are not proven read`,
      });
    }
    return this.verdict;
  }

  private finish(verdict: Verdict): Verdict {
    this.verdict = verdict;
    return verdict;
  }
}
