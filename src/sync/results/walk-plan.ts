/**
 * How a first load or full walk reads the list: whole, or by closed date windows then the
 * undated tail and the open window (windowed-walk.ts). The rule is stated in
 * docs/completeness.md ("First loads and full walks read closed windows"); this file is
 * that rule, pure, so it can be tested by itself.
 */
import { z } from 'zod';
import { parseDay, splitWindows, type ResultWindow } from './days.ts';

/**
 * Where the first closed window starts: before any date a platform of training results
 * holds, so the first window also takes whatever the first page did not show (the
 * earliest date is found from it, and the order of the list is not documented).
 */
export const FLOOR_DAY = '1900-01-01';

/** Windows at least, for windows to be worth their extra requests (one part-filled page each, and the counts). */
export const FEWEST_WINDOWS = 4;

const DAY_MS = 86_400_000;

const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/);
const windowSchema = z.object({ start: day, end: day });

export const walkShapeSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('whole'), why: z.string() }),
  z.object({
    kind: z.literal('windows'),
    /** Closed windows, oldest first: every day before `openDay`. */
    windows: z.array(windowSchema).min(1),
    /** The run's day (UTC): results dated from its start on are the open window. */
    openDay: day,
    /** Results per page, as the first page showed. */
    pageSize: z.number().int().positive(),
    /** The list's total then: a page past its end asks for a total alone. */
    listTotal: z.number().int().min(0),
  }),
]);

export type WalkShape = z.infer<typeof walkShapeSchema>;

export interface WalkFacts {
  /** `totalEntities` of the list without dates, and how many its first page held. */
  total: number;
  firstPageSize: number;
  /** The earliest date on the first page (ISO-8601), if it held a dated result. */
  earliest: string | undefined;
  /** The run's day, `YYYY-MM-DD` (UTC). */
  openDay: string;
  /** TRAINSYNC_RESULTS_WALK_WINDOW_PAGES. */
  windowPages: number;
}

/**
 * Windows when the list holds at least FEWEST_WINDOWS windows of `windowPages` pages and
 * its first page shows a dated result before the run's day; whole otherwise. The days from
 * the earliest to the run's day are split into windows of equal days, as many as the list
 * holds windows of pages (at most one a day); the first window reaches back to FLOOR_DAY.
 */
export function planWalk(facts: WalkFacts): WalkShape {
  const { total, firstPageSize, windowPages } = facts;
  if (firstPageSize === 0 || total <= firstPageSize) return { kind: 'whole', why: 'the list fits on one page' };
  const pages = Math.ceil(total / firstPageSize);
  if (pages < FEWEST_WINDOWS * windowPages) {
    return { kind: 'whole', why: `the list holds ${pages} pages, fewer than ${FEWEST_WINDOWS} windows of ${windowPages}` };
  }
  const earliestMs = facts.earliest === undefined ? Number.NaN : Date.parse(facts.earliest);
  if (Number.isNaN(earliestMs)) return { kind: 'whole', why: 'the first page held no dated result' };
  const openMs = parseDay(facts.openDay);
  const earliestDayMs = Math.max(Math.floor(earliestMs / DAY_MS) * DAY_MS, parseDay(FLOOR_DAY));
  const days = Math.round((openMs - earliestDayMs) / DAY_MS);
  if (days < 1) return { kind: 'whole', why: 'the first page held no result dated before the run’s day' };
  const count = Math.min(days, Math.floor(pages / windowPages));
  const windows: ResultWindow[] = splitWindows(new Date(earliestDayMs).toISOString().slice(0, 10), facts.openDay, Math.ceil(days / count));
  windows[0] = { start: FLOOR_DAY, end: windows[0]!.end };
  return { kind: 'windows', windows, openDay: facts.openDay, pageSize: firstPageSize, listTotal: total };
}

/** The `startDate` that keeps results dated from the start of `day` on (exclusive and inclusive readings alike, see days.ts). */
export function fromDay(day: string): string {
  return new Date(parseDay(day) - 1).toISOString();
}
