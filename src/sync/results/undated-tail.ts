/**
 * Whether a read of the tail of the list without dates saw every undated result.
 * docs/completeness.md argues it; this file is that check and nothing else (no I/O), so
 * a generated model can drive it (test/undated-tail-model.test.ts).
 *
 * Only the list without dates lists the results that have no date (begun, not completed):
 * a query with a date bound does not. A windowed walk reads the dated results by their
 * dates, so of the list without dates it reads only the tail: from the page where the
 * dated ones end, in a list that puts them first. Nothing documents that order, so the
 * tail is counted:
 *
 * - the dated results' count `D` is one request (a date bound and no other, a page past
 *   the end), the list's total `T` comes with every page, so the undated results number
 *   `T − D` at an instant where both are known;
 * - the read is *covered* when the undated ids it saw, less those that can have gone
 *   since, are at least `T − D` at its end: then it saw every undated result listed at
 *   its end, wherever the list put them;
 * - it is *another order* when nothing changed while it read and it saw fewer: some
 *   undated result sits where the tail read did not look (the walk then reads the whole
 *   list, and remembers it for the organisation);
 * - otherwise the count cannot tell (`unknown`).
 *
 * Instants. `D` and `T` come from different requests. The check asks for `D` right after
 * a page (`wantsCount`), then for `T` once more, and takes `D` as of that page when the
 * two totals around it agree: under the rule's assumption (no interval between two
 * requests holds both a removal and an arrival) an unchanged total means nothing
 * changed. It asks after the first page (where the count starts), after every page whose
 * total moved (to learn what the change was: dated or not), and after the last page.
 *
 * What can have gone. Between two instants where both are known, the undated results
 * changed by ΔU = ΔT − ΔD. `D` is asked for in disjoint groups (date ranges) that add up
 * to it: a group that rose held at least that many dated arrivals, one that fell that many
 * dated removals. Removals of undated results are at most the total's falls less the
 * dated removals, and at most its rises less the dated arrivals less ΔU; when the total
 * never moved, a dated count that rose is counted as undated results that completed. Before
 * the first instant where both are known, at most the total's falls. And a change can
 * only take a result last seen before it: one seen again later was still there.
 *
 * Read again. When the count cannot tell, the tail is read again from its start by the
 * same check (`confirm`): the results seen again are no longer among those that can have
 * gone, so the read stops as soon as the count covers (`done`), usually long before the
 * end of the tail (it needs the results seen before the change that could have gone).
 */

export type TailVerdict = 'covered' | 'another-order' | 'unknown';

export interface TailOutcome {
  verdict: TailVerdict;
  /** Distinct undated results seen. */
  seen: number;
  /** Undated results at the end: `T − D`, when known. */
  undated?: number | undefined;
  /** Seen undated results that can have gone or completed since. */
  gone?: number | undefined;
}

/** Counts asked for in a row while the total keeps moving, before the check gives up on pinning that instant. */
const MOST_COUNTS_IN_A_ROW = 3;

export class UndatedTail {
  /** The list's total at each instant it was seen, in order: pages (one at a time) and the totals asked for after a count. */
  private readonly totals: number[] = [];
  /** The dated counts, by group, asked for right after instant i (the next instant is the total asked for right after them). */
  private readonly counts = new Map<number, readonly number[]>();
  /** Each undated result seen, and the latest instant it was seen at. */
  private readonly lastSeen = new Map<string, number>();
  private countsInRow = 0;
  private confirming = false;
  private outcome: TailOutcome | undefined;

  /** `start`: the position the tail read starts from (every result below it taken as dated). */
  constructor(private readonly start: number) {}

  /** A page of the tail, answered: its total and the keys of its undated results. */
  page(total: number, undatedKeys: Iterable<string>): void {
    if (this.outcome) throw new Error('the tail check has finished');
    const instant = this.totals.length;
    this.totals.push(total);
    this.countsInRow = 0;
    for (const key of undatedKeys) this.lastSeen.set(key, instant);
  }

  /**
   * Whether to ask for the dated count (and the total right after it) now, before the next
   * page: after the first page, after a page whose total moved, and again while the
   * total asked for after a count differs from the one before it. While confirming, also
   * when the read would be covered if nothing changed since the latest count.
   */
  get wantsCount(): boolean {
    const n = this.totals.length;
    if (n === 0) return false;
    const latest = this.totals[n - 1]!;
    if (this.counts.has(n - 2)) return latest !== this.totals[n - 2] && this.countsInRow < MOST_COUNTS_IN_A_ROW;
    if (n === 1 || latest !== this.totals[n - 2]) return true;
    return this.confirming && this.countsInRow === 0 && this.wouldCover();
  }

  /**
   * The dated count asked for after the latest instant, then the list's total asked for
   * right after it. `dated` is one count, or the counts of disjoint groups of the dated
   * results that add up to it (date ranges with no day in common): a group's count that
   * rose shows a dated arrival, one that fell a dated removal.
   */
  counted(dated: number | readonly number[], total: number): void {
    if (this.outcome) throw new Error('the tail check has finished');
    if (this.totals.length === 0) throw new Error('the dated count is asked for after a page');
    this.counts.set(this.totals.length - 1, typeof dated === 'number' ? [dated] : [...dated]);
    this.totals.push(total);
    this.countsInRow += 1;
  }

  /** Whether the latest instant's dated count is known: the read may end here. */
  get settled(): boolean {
    const n = this.totals.length;
    return this.counts.has(n - 2) && this.totals[n - 1] === this.totals[n - 2];
  }

  /**
   * After a read that ended `unknown`: the tail is read again from its start, by the same
   * check, to see again the results a removal may have taken (see `done`).
   */
  confirm(): void {
    this.confirming = true;
  }

  /** The read so far is covered, as of a settled instant: a confirming read may stop here. */
  get done(): boolean {
    return this.settled && this.judge().verdict === 'covered';
  }

  /** The verdict, once the last page was followed by a count (`counted`, repeated while `wantsCount`). */
  finish(): TailOutcome {
    this.outcome ??= this.judge();
    return this.outcome;
  }

  /** The verdict as of now, without finishing (a confirming read may follow). */
  judgeNow(): TailOutcome {
    return this.judge();
  }

  private dated(index: number): number {
    let sum = 0;
    for (const c of this.counts.get(index)!) sum += c;
    return sum;
  }

  /** Instants whose dated count is known as of themselves (the total did not move around the count). */
  private anchors(): number[] {
    return [...this.counts.keys()].sort((a, b) => a - b).filter((i) => this.totals[i + 1] === this.totals[i]);
  }

  private judge(): TailOutcome {
    const seen = this.lastSeen.size;
    const anchors = this.anchors();
    const last = this.totals.length - 2;
    // The end must be known: it is what the count is compared with.
    if (last < 0 || !this.counts.has(last) || anchors.at(-1) !== last) return { verdict: 'unknown', seen };
    const gone = this.goneUpTo(anchors);
    const undated = this.totals[last]! - this.dated(last);
    if (seen - gone >= undated) return { verdict: 'covered', seen, undated, gone };
    // Nothing changed: one total throughout, and every group's count the same at every count.
    const first = this.counts.get(0);
    const quiet = anchors[0] === 0 && this.totals.every((t) => t === this.totals[0]) && [...this.counts.values()].every((c) => c.length === first!.length && c.every((n, g) => n === first![g]));
    if (quiet && this.start <= this.dated(0)) return { verdict: 'another-order', seen, undated, gone };
    return { verdict: 'unknown', seen, undated, gone };
  }

  /** Seen undated results that can have gone by the last of `anchors`. */
  private goneUpTo(anchors: readonly number[]): number {
    // Before the first known instant, only the total's falls bound what went.
    let gone = Math.min(this.movesBetween(0, anchors[0]!).falls, this.seenBefore(anchors[0]!));
    for (let k = 1; k < anchors.length; k++) gone += Math.min(this.goneBetween(anchors[k - 1]!, anchors[k]!), this.seenBefore(anchors[k]!));
    return gone;
  }

  /** Seen undated results last seen before instant b: the only ones a change before b can have taken (one seen at b or later was there after it). */
  private seenBefore(b: number): number {
    let n = 0;
    for (const instant of this.lastSeen.values()) if (instant < b) n++;
    return n;
  }

  /** While confirming: covered if the latest instant had the latest count (the count then asked for decides). */
  private wouldCover(): boolean {
    const anchors = this.anchors();
    const latest = anchors.at(-1);
    if (latest === undefined) return false;
    const n = this.totals.length;
    const gone = this.goneUpTo(anchors) + Math.min(this.movesBetween(latest, n - 1).falls, this.seenBefore(n - 1));
    return this.lastSeen.size - gone >= this.totals[n - 1]! - this.dated(latest);
  }

  /**
   * The most seen undated results that can have gone between instants a and b (see the
   * header): removals of undated results are at most the falls less the dated removals the
   * groups show, and at most the rises less the dated arrivals they show less the undated
   * results' change.
   */
  private goneBetween(a: number, b: number): number {
    const { rises, falls } = this.movesBetween(a, b);
    const from = this.counts.get(a)!;
    const to = this.counts.get(b)!;
    let datedArrivals = 0;
    let datedRemovals = 0;
    let deltaDated = 0;
    const groups = Math.max(from.length, to.length);
    for (let g = 0; g < groups; g++) {
      const delta = (to[g] ?? 0) - (from[g] ?? 0);
      deltaDated += delta;
      if (delta > 0) datedArrivals += delta;
      else datedRemovals -= delta;
    }
    // The total stood still: under the rule's assumption only completions happened, each a
    // group's rise (a group that fell as well takes a removal and an arrival in one interval,
    // the stated risk, and is taken at its net change).
    if (rises === 0 && falls === 0) return Math.max(0, deltaDated);
    const deltaUndated = this.totals[b]! - this.totals[a]! - deltaDated;
    return Math.max(0, Math.min(falls - datedRemovals, rises - datedArrivals - deltaUndated));
  }

  /** How far the total rose and fell, step by step, between instants a and b. */
  private movesBetween(a: number, b: number): { rises: number; falls: number } {
    let rises = 0;
    let falls = 0;
    for (let i = a; i < b; i++) {
      const step = this.totals[i + 1]! - this.totals[i]!;
      if (step > 0) rises += step;
      else falls -= step;
    }
    return { rises, falls };
  }
}
