/**
 * TRAINSYNC_SCHEDULE_SPREAD: the window the organisations' scheduled jobs are spread over
 * (src/queue/schedule-spread.ts). `auto` (the default) is no spread for one organisation,
 * whose schedules stay exactly as written, and two hours for several.
 */

/** Minutes, or null for `auto` (a string would read as a problem to the settings parser). */
export type ScheduleSpreadSetting = number | null;

/** The window of `auto` when several organisations are served, in minutes. */
export const AUTO_SPREAD_MINUTES = 120;

const HINT = 'a window up to 24h, e.g. 2h, 90m, 1h30m or 0 (no spread); or auto (none for one organisation, 2h for several)';

/** "2h", "90m", "1h30m", "PT2H", "0" → minutes; "auto" → null; anything else → the problem in words. */
export function parseScheduleSpread(value: string): ScheduleSpreadSetting | string {
  const text = value.trim().toLowerCase();
  if (text === 'auto') return null;
  if (text === '0') return 0;
  const match = /^(?:pt)?(?:(\d+)h)?(?:(\d+)m)?$/.exec(text);
  if (!match || (match[1] === undefined && match[2] === undefined)) return HINT;
  const minutes = Number(match[1] ?? 0) * 60 + Number(match[2] ?? 0);
  return minutes <= 24 * 60 ? minutes : HINT;
}

/** The window in minutes for a deployment of `organisations`. */
export function scheduleSpreadMinutes(setting: ScheduleSpreadSetting, organisations: number): number {
  return setting ?? (organisations > 1 ? AUTO_SPREAD_MINUTES : 0);
}
