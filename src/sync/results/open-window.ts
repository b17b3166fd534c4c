/**
 * When the open window (results dated from the start of the run's day on, where new
 * completions land) has been read enough. docs/completeness.md argues it; this file is
 * the decision and nothing else (no I/O), so the model test can drive it.
 *
 * The completeness rule (completeness.ts) reads the window and proves every result
 * listed throughout the read was read, unless one page interval held both a removal
 * behind the reader and an arrival: the total stays put and the result that crossed
 * the page boundary backwards is not noticed. The open window is where arrivals happen,
 * so it is read a second time, one page at a time, and the two reads are compared:
 *
 * - a hidden loss in the first read needs a removal of a result the first read had
 *   read (then the second read lacks that id) or of one that arrived while it read
 *   (then the first read saw its total change);
 * - so when every page of both reads showed one total and both listed the same ids, a
 *   result listed throughout is missing only if at least three page intervals held a
 *   removal and an arrival together: two in the first read, one in the second;
 * - otherwise the window is read a third time under the rule, and a result is missing
 *   only if each of the three reads lost it, each through such an interval.
 */

/** What one read of the window showed. */
export interface WindowRead {
  /** The rule's verdict on this read. */
  verdict: { kind: 'complete' } | { kind: 'incomplete'; reason: string };
  /** `totalEntities` of every page, in the order they were answered. */
  totals: readonly number[];
  /** The ids of every result on its pages. */
  ids: ReadonlySet<string>;
}

export type OpenWindowStep = { kind: 'read' } | { kind: 'complete' } | { kind: 'incomplete'; reason: string };

/** The most reads of the open window: the read, the confirming read, and one more when they differ. */
export const MOST_OPEN_READS = 3;

/** Whether two reads saw one unchanged list: one total on every page of both, and the same ids. */
export function sameList(a: WindowRead, b: WindowRead): boolean {
  const total = a.totals[0] ?? b.totals[0];
  if (total === undefined) return a.ids.size === 0 && b.ids.size === 0;
  for (const t of a.totals) if (t !== total) return false;
  for (const t of b.totals) if (t !== total) return false;
  if (a.ids.size !== b.ids.size) return false;
  for (const id of a.ids) if (!b.ids.has(id)) return false;
  return true;
}

/** After the reads so far (in order), what to do with the open window next. */
export function openWindowStep(reads: readonly WindowRead[]): OpenWindowStep {
  const last = reads.at(-1);
  if (last === undefined) return { kind: 'read' };
  // A read the rule could not prove is not made good by another: the window is named unfinished.
  if (last.verdict.kind === 'incomplete') return { kind: 'incomplete', reason: last.verdict.reason };
  if (reads.length === 1) return { kind: 'read' };
  if (reads.length === 2) return sameList(reads[0]!, reads[1]!) ? { kind: 'complete' } : { kind: 'read' };
  return { kind: 'complete' };
}
