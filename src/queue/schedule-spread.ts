import { createHash } from 'node:crypto';

/**
 * Spreading the organisations' schedules: with many organisations, every nightly job at
 * the same cron minute queues thousands of jobs at once and sends every key's first
 * requests in the same second. Each organisation gets a stable offset inside a window
 * (TRAINSYNC_SCHEDULE_SPREAD), the same for all its jobs so their order is kept, and its
 * cron lines are moved by that offset. Pure: the argument is in docs/several-organisations.md.
 */

const MINUTES_PER_DAY = 24 * 60;

/**
 * The organisation's offset in minutes, in [0, windowMinutes): from a hash of its slug, so
 * it is the same on every worker and after every restart, and organisations are spread
 * evenly (in expectation) however many there are and whatever their names.
 */
export function spreadOffsetMinutes(slug: string, windowMinutes: number): number {
  if (windowMinutes <= 1) return 0;
  const hash = createHash('sha256').update(slug).digest().readUInt32BE(0);
  return hash % Math.floor(windowMinutes);
}

const isNumber = (field: string): boolean => /^\d+$/.test(field);

/**
 * `pattern` moved `offsetMinutes` later, for the patterns where that is well defined:
 * - a fixed minute and hour (`30 2 * * *`, `0 3 * * 1-5`): the time of day moves; past
 *   midnight it wraps to the early hours when every day fires (`*` day fields), and when
 *   the days are restricted the offset is taken modulo the minutes left in the day, so a
 *   Monday job stays on Monday;
 * - a fixed minute and any other hour field (`0 * * * *`, `15 *\/6 * * *`): the minute
 *   moves by the offset modulo 60, so the job keeps its hours;
 * - anything else (`*\/15 * * * *`, a minute list): returned unchanged, as its fires are
 *   already spread or its author chose each minute.
 * Five fields, or six with seconds first; a seconds field is kept as it is.
 */
export function spreadCronLine(pattern: string, offsetMinutes: number): string {
  const fields = pattern.trim().split(/\s+/);
  if (offsetMinutes <= 0 || (fields.length !== 5 && fields.length !== 6)) return pattern;
  const at = fields.length - 5;
  const [minute, hour, dayOfMonth, month, dayOfWeek] = fields.slice(at) as [string, string, string, string, string];
  if (!isNumber(minute)) return pattern;
  const moved = [...fields];
  if (isNumber(hour)) {
    const start = Number(hour) * 60 + Number(minute);
    const everyDay = dayOfMonth === '*' && month === '*' && (dayOfWeek === '*' || dayOfWeek === '?');
    const shifted = everyDay ? (start + offsetMinutes) % MINUTES_PER_DAY : start + (offsetMinutes % (MINUTES_PER_DAY - start));
    moved[at] = String(shifted % 60);
    moved[at + 1] = String(Math.floor(shifted / 60));
  } else {
    moved[at] = String((Number(minute) + (offsetMinutes % 60)) % 60);
  }
  return moved.join(' ');
}
