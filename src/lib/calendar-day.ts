/**
 * Calendar days, checked strictly: every date a person types (`--since`, a feed's end
 * date, TRAINSYNC_RESULTS_EPOCH) goes through `calendarDay`, so 2024-02-30 is refused
 * everywhere instead of rolling over into March.
 */

const pad = (n: number, width: number): string => String(n).padStart(width, '0');

function daysIn(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** `YYYY-MM-DD` for a day that exists, else undefined (month 13, 30 February, day 0). */
export function calendarDay(year: number, month: number, day: number): string | undefined {
  if (!Number.isInteger(year) || year < 1 || year > 9999) return undefined;
  if (!Number.isInteger(month) || month < 1 || month > 12) return undefined;
  if (!Number.isInteger(day) || day < 1 || day > daysIn(year, month)) return undefined;
  return `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}`;
}

/** A typed `YYYY-MM-DD`, or undefined when it is written otherwise or names no real day. */
export function parseIsoDay(text: string): string | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text.trim());
  return m ? calendarDay(Number(m[1]), Number(m[2]), Number(m[3])) : undefined;
}
