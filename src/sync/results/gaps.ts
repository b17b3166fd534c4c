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

/** How far back (in pages read) the watch looks for the page answered last before another was asked for. */
const IN_FLIGHT_LOOKBACK = 64;

interface PageSeen {
  page: number;
  received: number;
  total: number | undefined;
}

interface Fall {
  /** When the page the fall showed against was answered. */
  knownAt: number;
  /** The lowest page that may have been served after the removal. */
  firstNew: number;
  /** The page whose total showed the fall. */
  page: number;
  drop: number;
}

/** When a page was asked for and answered; see Page.timing. */
export interface PageTiming {
  sent: number;
  received: number;
}

/**
 * Watches one paged read; feed it every page in page order. A fall counts only against
 * the page answered last before the falling page was asked for: that one was surely
 * served first, and as arrivals only raise the total, a lower total then means a removal
 * (pages read ahead, answered in another order, are never compared with each other).
 */
export class GapWatch {
  private lastTotal: number | undefined;
  private pageSize = 0;
  private distinct = 0;
  private clock = 0;
  private readonly seen: PageSeen[] = [];
  private readonly falls: Fall[] = [];
  private readonly recent: Array<Set<string>> = [];

  constructor(
    private readonly startPage: number,
    /** The total a resumed read, or a read of some pages again, last knew. */
    private readonly expectedTotal: number | undefined,
    /** A gap found before a restart (from the checkpoint): still to be read again. */
    private readonly known: WalkGap | undefined = undefined,
  ) {}

  /**
   * One page, in page order: its number, when it was asked for and answered (default:
   * one after another), its totalEntities, and the id of each of its records (undefined
   * when unreadable).
   */
  page(page: number, timing: PageTiming | undefined, total: number | undefined, ids: ReadonlyArray<string | undefined>): void {
    this.pageSize = Math.max(this.pageSize, ids.length);
    const { sent, received } = timing ?? { sent: this.clock + 1, received: this.clock + 2 };
    this.clock = Math.max(this.clock, received);
    if (total !== undefined) {
      // The page answered last before this one was asked for, and the pages answered after it.
      let known: PageSeen | undefined;
      let firstNew = page;
      const lookback = Math.max(0, this.seen.length - IN_FLIGHT_LOOKBACK);
      for (let i = this.seen.length - 1; i >= lookback; i--) {
        const earlier = this.seen[i]!;
        if (earlier.received < sent && earlier.total !== undefined && (!known || earlier.received > known.received)) known = earlier;
      }
      const knownTotal = known ? known.total : this.expectedTotal;
      const knownAt = known ? known.received : 0;
      for (let i = this.seen.length - 1; i >= lookback; i--) if (this.seen[i]!.received > knownAt) firstNew = Math.min(firstNew, this.seen[i]!.page);
      if (knownTotal !== undefined && total < knownTotal) this.recordFall({ knownAt, firstNew, page, drop: knownTotal - total });
      this.lastTotal = total;
    }
    this.seen.push({ page, received, total });
    if (this.seen.length > IN_FLIGHT_LOOKBACK * 2) this.seen.splice(0, IN_FLIGHT_LOOKBACK);
    const fresh = new Set<string>();
    for (const id of ids) {
      if (id === undefined) {
        // Cannot be matched with another sighting: counted as one more result.
        this.distinct += 1;
      } else if (!fresh.has(id) && !this.recent.some((earlier) => earlier.has(id))) {
        fresh.add(id);
        this.distinct += 1;
      }
    }
    this.recent.push(fresh);
    if (this.recent.length > RECENT_PAGES) this.recent.shift();
  }

  /** Pages in flight together that show the same fall against the same page are one fall. */
  private recordFall(fall: Fall): void {
    const same = this.falls.find((f) => f.knownAt === fall.knownAt);
    if (!same) {
      this.falls.push(fall);
      return;
    }
    same.drop = Math.max(same.drop, fall.drop);
    same.firstNew = Math.min(same.firstNew, fall.firstNew);
    same.page = Math.max(same.page, fall.page);
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
   * Results that moved back across a removal sit at the end of the page before the first
   * page served after it, or further back by every removal since: from there to the
   * page that showed the fall.
   */
  private fallenRange(): WalkGap | undefined {
    if (this.falls.length === 0) return undefined;
    const size = Math.max(this.pageSize, 1);
    let dropped = 0;
    let from = Infinity;
    let to = 0;
    // Latest first, so `dropped` holds this fall's removals and every later one's.
    for (let i = this.falls.length - 1; i >= 0; i--) {
      const fall = this.falls[i]!;
      dropped += fall.drop;
      from = Math.min(from, fall.firstNew - Math.ceil(dropped / size));
      to = Math.max(to, fall.page);
    }
    return { reason: `${dropped} result(s) removed while paged (totalEntities fell)`, from: Math.max(1, from), to };
  }
}
