/**
 * When a paged read of results may have skipped one (a "gap"), and which pages to read
 * again to close it.
 *
 * Results are listed by offset: a result that appears ahead of the reader's position
 * shifts later results forward (the reader sees one twice, skips none), one that
 * appears behind it (or at the end, where new results land) is read or belongs to the
 * next run, but a result removed behind the reader shifts every later result back, and
 * the first result of the next page lands on a page already read. So:
 *
 * - `totalEntities` falling from one page to the next (or below what a resumed walk
 *   expected) is a possible gap: the results that moved back now sit at the end of the
 *   page before, or further back by as many as were removed later. Those pages are read
 *   again, not the whole list.
 * - At the end of a read of the whole list, fewer distinct ids than the last
 *   `totalEntities` is a possible gap too (a removal offset by an arrival, say); where
 *   is unknown, so the whole list is read again.
 * - Arrivals alone never make a gap: totals only grow, and the distinct ids account
 *   for the count.
 *
 * Distinct ids are counted without holding every id: a shift moves a result by at most
 * the few results that changed between two pages, so a result seen twice is always
 * seen again within the last few pages.
 */

/** Pages to read again (inclusive), and why. `to` undefined: to the end of the list. */
export interface WalkGap {
  reason: string;
  from: number;
  to: number | undefined;
}

/** Pages whose ids are kept to recognise a result seen twice. */
const RECENT_PAGES = 4;

/** The union of two page ranges (to the end when either goes there). */
export function unionGap(a: WalkGap, b: WalkGap): WalkGap {
  return { reason: b.reason, from: Math.min(a.from, b.from), to: a.to === undefined || b.to === undefined ? undefined : Math.max(a.to, b.to) };
}

interface Fall {
  page: number;
  /** Results removed before this fall was seen, all falls counted. */
  droppedBefore: number;
}

/** Watches one paged read; feed it every page in page order. */
export class GapWatch {
  private previousTotal: number | undefined;
  private lastTotal: number | undefined;
  private pageSize = 0;
  private distinct = 0;
  private dropped = 0;
  private readonly falls: Fall[] = [];
  private readonly recent: Array<Set<string>> = [];

  constructor(
    private readonly startPage: number,
    expectedTotal: number | undefined,
    /** A gap found before a restart (from the checkpoint): still to be read again. */
    private readonly known: WalkGap | undefined = undefined,
  ) {
    this.previousTotal = expectedTotal;
  }

  /** One page: its number, its totalEntities, and the id of each of its records (undefined when unreadable). */
  page(page: number, total: number | undefined, ids: ReadonlyArray<string | undefined>): void {
    this.pageSize = Math.max(this.pageSize, ids.length);
    if (total !== undefined) {
      if (this.previousTotal !== undefined && total < this.previousTotal) {
        this.falls.push({ page, droppedBefore: this.dropped });
        this.dropped += this.previousTotal - total;
      }
      this.previousTotal = total;
      this.lastTotal = total;
    }
    const seen = new Set<string>();
    for (const id of ids) {
      if (id === undefined) {
        // Cannot be matched with another sighting: counted as one more result.
        this.distinct += 1;
      } else if (!seen.has(id) && !this.recent.some((page) => page.has(id))) {
        seen.add(id);
        this.distinct += 1;
      }
    }
    this.recent.push(seen);
    if (this.recent.length > RECENT_PAGES) this.recent.shift();
  }

  /** The gap seen so far (for a checkpoint), without the end-of-list check. */
  soFar(): WalkGap | undefined {
    const fallen = this.fallenRange();
    if (fallen && this.known) return unionGap(this.known, fallen);
    return fallen ?? this.known;
  }

  /**
   * The gap of the finished read. `wholeList`: it read from `startPage` to the end, so
   * its distinct ids must account for the last total (pages before `startPage`, read
   * before a restart, count as full).
   */
  end(wholeList: boolean): WalkGap | undefined {
    const gap = this.soFar();
    if (gap || !wholeList || this.lastTotal === undefined) return gap;
    const before = (this.startPage - 1) * this.pageSize;
    const missing = this.lastTotal - before - this.distinct;
    if (missing <= 0) return undefined;
    return { reason: `${missing} result(s) unaccounted for: read ${before + this.distinct} distinct of ${this.lastTotal}`, from: 1, to: undefined };
  }

  /** The last totalEntities seen. */
  get total(): number | undefined {
    return this.lastTotal;
  }

  private fallenRange(): WalkGap | undefined {
    if (this.falls.length === 0) return undefined;
    const size = Math.max(this.pageSize, 1);
    let from = Infinity;
    let to = 0;
    for (const fall of this.falls) {
      // Results that moved back across this fall, further back by every removal since.
      from = Math.min(from, fall.page - Math.ceil((this.dropped - fall.droppedBefore) / size));
      // The page of the fall too: pages fetched ahead may have been served out of order.
      to = Math.max(to, fall.page);
    }
    return {
      reason: `${this.dropped} result(s) removed while paged (totalEntities fell at page ${this.falls[0]!.page})`,
      from: Math.max(1, from),
      to,
    };
  }
}
