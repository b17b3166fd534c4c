/**
 * How the console shows a moment: one way on every page, in UTC and labelled so (the
 * schedules are cron lines in UTC, and operators in several time zones read the same page).
 * `html` renders every interpolated Date with `utcText`; `when` adds the machine-readable
 * `<time>` element and, where it helps (what runs next, what happened last), how far away.
 */

const pad = (n: number): string => String(n).padStart(2, '0');

/** `2026-11-26 02:00 UTC`: minutes, 24-hour (the exact instant is in `when`'s datetime and title). */
export function utcText(at: Date): string {
  if (Number.isNaN(at.getTime())) return 'unknown time';
  return `${at.getUTCFullYear()}-${pad(at.getUTCMonth() + 1)}-${pad(at.getUTCDate())} ${pad(at.getUTCHours())}:${pad(at.getUTCMinutes())} UTC`;
}

/** `in 3 h`, `12 min ago`, `just now`: rounded to the unit that reads naturally at that distance. */
export function relativeText(at: Date, now: Date): string {
  const seconds = (at.getTime() - now.getTime()) / 1000;
  const size = Math.abs(seconds);
  if (size < 45) return seconds > 0 ? 'in under a minute' : 'just now';
  const [n, unit] = size < 90 * 60 ? [Math.round(size / 60), 'min'] : size < 36 * 3600 ? [Math.round(size / 3600), 'h'] : [Math.round(size / 86_400), 'd'];
  return seconds > 0 ? `in ${n} ${unit}` : `${n} ${unit} ago`;
}

/** A parsed ISO string (BullMQ's schedules give strings), or undefined for none or garbage. */
export function dateOf(value: string | Date | null | undefined): Date | undefined {
  if (value === null || value === undefined) return undefined;
  const at = value instanceof Date ? value : new Date(value);
  return Number.isNaN(at.getTime()) ? undefined : at;
}
