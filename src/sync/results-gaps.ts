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

/** Watches one paged read; feed it every page in page order. */
export class GapWatch {
  private lastTotal: number | undefined;
  private pageSize = 0;
  private distinct = 0;
  /** totalEntities by the order the page's response arrived in (index 0: what was expected before). */
  private readonly timeline: Array<number | undefined> = [];
  /** The arrival order of each page read. */
  private readonly arrivalOfPage = new Map<number, number>();
  private arrivals = 0;
  private readonly recent: Array<Set<string>> = [];

  constructor(
    private readonly startPage: number,
    expectedTotal: number | undefined,
    /** A gap found before a restart (from the checkpoint): still to be read again. */
    private readonly known: WalkGap | undefined = undefined,
  ) {
    this.timeline[0] = expectedTotal;
  }

  /**
   * One page, in page order: its number, the order its response arrived in (pages read
   * ahead may arrive out of page order; default: in page order), its totalEntities, and
   * the id of each of its records (undefined when unreadable).
   */
  page(page: number, received: number | undefined, total: number | undefined, ids: ReadonlyArray<string | undefined>): void {
    this.pageSize = Math.max(this.pageSize, ids.length);
    this.arrivals = Math.max(this.arrivals + 1, received ?? 0);
    const arrival = received ?? this.arrivals;
    this.arrivalOfPage.set(page, arrival);
    this.timeline[arrival] = total;
    if (total !== undefined) this.lastTotal = total;
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

  /**
   * Falls of the total in the order responses arrived (arrivals only raise it, so pages
   * read ahead and answered out of order are no fall). A page answered after a fall
   * whose page before was answered before it is where results moved back across.
   */
  private fallenRange(): WalkGap | undefined {
    const falls: Array<{ at: number; drop: number }> = [];
    let previous: number | undefined;
    for (let at = 0; at < this.timeline.length; at++) {
      const total = this.timeline[at];
      if (total === undefined) continue;
      if (previous !== undefined && total < previous) falls.push({ at, drop: previous - total });
      previous = total;
    }
    if (falls.length === 0) return undefined;
    const size = Math.max(this.pageSize, 1);
    let dropped = 0;
    let from = Infinity;
    let to = 0;
    // Latest first, so `dropped` holds this fall's removals and every later one's.
    for (const fall of falls.reverse()) {
      dropped += fall.drop;
      for (const [page, arrival] of this.arrivalOfPage) {
        // Pages before the read began were answered before any fall it sees.
        const before = page === this.startPage ? 0 : this.arrivalOfPage.get(page - 1);
        if (before === undefined || before >= fall.at || arrival < fall.at) continue;
        // Results that moved back onto the page before, further back by every removal since.
        from = Math.min(from, page - Math.ceil(dropped / size));
        // The page itself too: a response may arrive in another order than it was served.
        to = Math.max(to, page);
      }
    }
    if (to === 0) return undefined;
    return { reason: `${dropped} result(s) removed while paged (totalEntities fell)`, from: Math.max(1, from), to };
  }
}
