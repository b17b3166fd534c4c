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
 * changed by ΔU = ΔT − ΔD. Removals of undated results are at most the total's falls in
 * between, and at most its rises less ΔU (what arrived and is not there); when the total
 * never moved, a dated count that rose is counted as undated results that completed.
 * Before the first instant where both are known, at most the total's falls.
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
  /** The dated count asked for right after instant i, by i (the next instant is the total asked for right after it). */
  private readonly counts = new Map<number, number>();
  private readonly seen = new Set<string>();
  private countsInRow = 0;
  private outcome: TailOutcome | undefined;

  /** `start`: the position the tail read starts from (every result below it taken as dated). */
  constructor(private readonly start: number) {}

  /** A page of the tail, answered: its total and the keys of its undated results. */
  page(total: number, undatedKeys: Iterable<string>): void {
    if (this.outcome) throw new Error('the tail check has finished');
    this.totals.push(total);
    this.countsInRow = 0;
    for (const key of undatedKeys) this.seen.add(key);
  }

  /**
   * Whether to ask for the dated count (and the total right after it) now, before the next
   * page: after the first page, after a page whose total moved, and again while the
   * total asked for after a count differs from the one before it.
   */
  get wantsCount(): boolean {
    const n = this.totals.length;
    if (n === 0) return false;
    const latest = this.totals[n - 1]!;
    if (this.counts.has(n - 2)) return latest !== this.totals[n - 2] && this.countsInRow < MOST_COUNTS_IN_A_ROW;
    return n === 1 || latest !== this.totals[n - 2];
  }

  /** The dated count asked for after the latest instant, then the list's total asked for right after it. */
  counted(dated: number, total: number): void {
    if (this.outcome) throw new Error('the tail check has finished');
    if (this.totals.length === 0) throw new Error('the dated count is asked for after a page');
    this.counts.set(this.totals.length - 1, dated);
    this.totals.push(total);
    this.countsInRow += 1;
  }

  /** Whether the latest instant's dated count is known: the read may end here. */
  get settled(): boolean {
    const n = this.totals.length;
    return this.counts.has(n - 2) && this.totals[n - 1] === this.totals[n - 2];
  }

  /** The verdict, once the last page was followed by a count (`counted`, repeated while `wantsCount`). */
  finish(): TailOutcome {
    this.outcome ??= this.judge();
    return this.outcome;
  }

  private judge(): TailOutcome {
    const seen = this.seen.size;
    // Anchors: instants whose dated count is known as of themselves (the total did not move around the count).
    const anchors = [...this.counts.keys()].sort((a, b) => a - b).filter((i) => this.totals[i + 1] === this.totals[i]);
    const last = this.totals.length - 2;
    // The end must be known: it is what the count is compared with.
    if (last < 0 || !this.counts.has(last) || anchors.at(-1) !== last) return { verdict: 'unknown', seen };
    const dated = (index: number): number => this.counts.get(index)!;
    // Before the first known instant, only the total's falls bound what went.
    let gone = this.movesBetween(0, anchors[0]!).falls;
    for (let k = 1; k < anchors.length; k++) gone += this.goneBetween(anchors[k - 1]!, anchors[k]!, dated(anchors[k - 1]!), dated(anchors[k]!));
    const undated = this.totals[last]! - dated(last);
    if (seen - gone >= undated) return { verdict: 'covered', seen, undated, gone };
    const quiet = anchors[0] === 0 && this.totals.every((t) => t === this.totals[0]) && [...this.counts.values()].every((d) => d === dated(0));
    if (quiet && this.start <= dated(0)) return { verdict: 'another-order', seen, undated, gone };
    return { verdict: 'unknown', seen, undated, gone };
  }

  /** The most seen undated results that can have gone between instants a and b (see the header). */
  private goneBetween(a: number, b: number, datedA: number, datedB: number): number {
    const { rises, falls } = this.movesBetween(a, b);
    const deltaDated = datedB - datedA;
    if (rises === 0 && falls === 0) return Math.max(0, deltaDated);
    const deltaUndated = this.totals[b]! - this.totals[a]! - deltaDated;
    return Math.max(0, Math.min(falls, rises - deltaUndated));
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
