/**
 * Splitting a date range of results into windows, and the query bounds of a window.
 *
 * The platform's date bounds are unclear (notes §7.3): the spec says `YYYY-MM-DD`, the
 * vendor says "after"/"before" (exclusive) and parses a DateTimeOffset, and the zone of
 * a date-only value is unknown. A window covering days [start, end) therefore asks for
 * `startDate = start - 1 day` and `endDate = end + 1 day`: under an inclusive-date
 * reading this is a superset, under an exclusive-instant reading it still covers every
 * instant of [start, end) even if the platform reads dates in a zone up to ±24 h away.
 * Neighbouring windows overlap; the loaders de-duplicate, so overlap costs reads, not rows.
 */

import { parseIsoDay } from '../../lib/calendar-day.ts';

export interface ResultWindow {
  /** First day covered, `YYYY-MM-DD`. */
  start: string;
  /** First day NOT covered, `YYYY-MM-DD`. */
  end: string;
}

const DAY_MS = 86_400_000;

export function parseDay(day: string): number {
  const checked = parseIsoDay(day);
  if (checked === undefined || checked !== day) throw new Error(`not a date (YYYY-MM-DD): ${day}`);
  return Date.parse(`${checked}T00:00:00Z`);
}

export function formatDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

export function addDays(day: string, days: number): string {
  return formatDay(parseDay(day) + days * DAY_MS);
}

/** Today's date in UTC. */
export function today(now: Date = new Date()): string {
  return formatDay(now.getTime());
}

/** Windows of `windowDays` covering [start, end); the last one may be shorter. */
export function splitWindows(start: string, end: string, windowDays: number): ResultWindow[] {
  if (windowDays < 1) throw new Error('windowDays must be at least 1');
  const windows: ResultWindow[] = [];
  const last = parseDay(end);
  for (let from = parseDay(start); from < last; from += windowDays * DAY_MS) {
    windows.push({ start: formatDay(from), end: formatDay(Math.min(from + windowDays * DAY_MS, last)) });
  }
  return windows;
}

/**
 * How a window's bounds are sent: `instant`, full date-times with an offset (the vendor
 * parses a DateTimeOffset), so a window that closed before the run began asks for exactly
 * its days; `day`, whole dates a day wider on each side, for a platform that refuses a
 * date-time (see windows.ts).
 */
export type WindowBounds = 'instant' | 'day';

/** The query parameters that cover a window under any reading of the bounds (see above). */
export function windowQuery(window: ResultWindow, bounds: WindowBounds): { startDate: string; endDate: string } {
  if (bounds === 'instant') {
    // "After" the start and "before" the end: a millisecond before midnight keeps a
    // result at midnight under an exclusive reading, and costs nothing under an inclusive one.
    return { startDate: new Date(parseDay(window.start) - 1).toISOString(), endDate: new Date(parseDay(window.end)).toISOString() };
  }
  return { startDate: addDays(window.start, -1), endDate: addDays(window.end, 1) };
}

export function windowKey(window: ResultWindow): string {
  return `${window.start}..${window.end}`;
}

/** The window a `windowKey` names, or undefined for any other key. */
export function parseWindowKey(key: string): ResultWindow | undefined {
  const match = /^(\d{4}-\d{2}-\d{2})\.\.(\d{4}-\d{2}-\d{2})$/.exec(key);
  return match ? { start: match[1]!, end: match[2]! } : undefined;
}

/** Whether an instant (ISO-8601) falls on one of the days [start, end), in UTC. */
export function onDays(instant: string, window: ResultWindow): boolean {
  const ms = Date.parse(instant);
  return ms >= parseDay(window.start) && ms < parseDay(window.end);
}
