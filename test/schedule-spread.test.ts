import { CronExpressionParser } from 'cron-parser';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { parseScheduleSpread, scheduleSpreadMinutes } from '../src/settings/schedule-spread.ts';
import { spreadCronLine, spreadOffsetMinutes } from '../src/queue/schedule-spread.ts';

const DAY = 24 * 60 * 60_000;
const WEEK = 7 * DAY;

/** Every fire time of `pattern` (UTC) in [from, from + span). */
function fires(pattern: string, from: Date, span: number): number[] {
  const expression = CronExpressionParser.parse(pattern, { tz: 'UTC', currentDate: new Date(from.getTime() - 1), endDate: new Date(from.getTime() + span) });
  const out: number[] = [];
  while (expression.hasNext()) out.push(expression.next().getTime());
  // endDate is inclusive: keep the window half-open.
  return out.filter((t) => t < from.getTime() + span);
}

const slug = fc.stringMatching(/^[a-z][a-z0-9-]{0,30}$/);
const minute = fc.integer({ min: 0, max: 59 });
const hour = fc.integer({ min: 0, max: 23 });
const offset = fc.integer({ min: 0, max: 24 * 60 });
/** A Monday, so a week from it holds every weekday once. */
const weekStart = new Date('2026-11-23T00:00:00Z');

describe('spreading the organisations\' schedules (a model of cron, not one simulator habit)', () => {
  it('an organisation\'s offset is stable and inside the window, and a thousand organisations fill a window evenly', () => {
    fc.assert(
      fc.property(slug, fc.integer({ min: 0, max: 1440 }), (org, window) => {
        const at = spreadOffsetMinutes(org, window);
        expect(at).toBe(spreadOffsetMinutes(org, window));
        expect(at).toBeGreaterThanOrEqual(0);
        expect(at).toBeLessThan(Math.max(1, window));
      }),
    );
    // 1,000 client slugs over 120 minutes: every quarter-hour of the window gets its share (125 expected), none twice it.
    const quarters = new Array<number>(8).fill(0);
    for (let i = 0; i < 1000; i += 1) quarters[Math.floor(spreadOffsetMinutes(`client-${i}`, 120) / 15)]! += 1;
    for (const count of quarters) expect(count).toBeGreaterThan(125 / 2);
    for (const count of quarters) expect(count).toBeLessThan(125 * 2);
  });

  it('a daily line fires once a day, exactly the offset later (wrapping past midnight)', () => {
    fc.assert(
      fc.property(minute, hour, offset, (m, h, by) => {
        const base = fires(`${m} ${h} * * *`, weekStart, WEEK);
        const spread = fires(spreadCronLine(`${m} ${h} * * *`, by), weekStart, WEEK);
        expect(spread).toHaveLength(base.length);
        const timeOfDay = (t: number): number => (t % DAY) / 60_000;
        for (const t of spread) expect(timeOfDay(t)).toBe((h * 60 + m + by) % 1440);
      }),
    );
  });

  it('a line on chosen days keeps its days and fires no earlier, within the day', () => {
    const days = fc.constantFrom('1-5', '1', '0,6', '*/2');
    fc.assert(
      fc.property(minute, hour, offset, days, (m, h, by, dow) => {
        const line = `${m} ${h} * * ${dow}`;
        const base = fires(line, weekStart, 2 * WEEK);
        const spread = fires(spreadCronLine(line, by), weekStart, 2 * WEEK);
        expect(spread).toHaveLength(base.length);
        base.forEach((t, i) => {
          expect(Math.floor(spread[i]! / DAY)).toBe(Math.floor(t / DAY));
          expect(spread[i]!).toBeGreaterThanOrEqual(t);
        });
      }),
    );
  });

  it('an hourly or stepped-hours line keeps its hours and how often it fires; a line without one minute is left as written', () => {
    const hours = fc.constantFrom('*', '*/6', '1-5', '2,14');
    fc.assert(
      fc.property(minute, hours, offset, (m, hourField, by) => {
        const line = `${m} ${hourField} * * *`;
        const base = fires(line, weekStart, DAY);
        const spread = fires(spreadCronLine(line, by), weekStart, DAY);
        expect(spread).toHaveLength(base.length);
        const hourOf = (t: number): number => Math.floor((t % DAY) / 3_600_000);
        expect(spread.map(hourOf)).toEqual(base.map(hourOf));
      }),
    );
    for (const line of ['*/15 * * * *', '0,30 2 * * *', '5-10 2 * * *']) expect(spreadCronLine(line, 37)).toBe(line);
    expect(spreadCronLine('0 30 2 * * *', 45)).toBe('0 15 3 * * *');
    expect(spreadCronLine('30 2 * * *', 0)).toBe('30 2 * * *');
  });

  it('the setting: durations up to a day, auto (none for one organisation, 2h for several), a message that says what to write', () => {
    expect(parseScheduleSpread('2h')).toBe(120);
    expect(parseScheduleSpread('90m')).toBe(90);
    expect(parseScheduleSpread('1h30m')).toBe(90);
    expect(parseScheduleSpread('PT2H')).toBe(120);
    expect(parseScheduleSpread('0')).toBe(0);
    expect(scheduleSpreadMinutes(parseScheduleSpread('auto') as null, 1)).toBe(0);
    expect(scheduleSpreadMinutes(null, 3)).toBe(120);
    expect(parseScheduleSpread('25h')).toMatch(/up to 24h, e.g. 2h/);
    expect(parseScheduleSpread('two hours')).toMatch(/up to 24h, e.g. 2h/);
    expect(loadConfig({ DATABASE_URL: 'postgres://x/y', TRAINSYNC_SCHEDULE_SPREAD: '45m' }).scheduleSpreadMinutes).toBe(45);
    expect(loadConfig({ DATABASE_URL: 'postgres://x/y' }).scheduleSpreadMinutes).toBe(0);
    expect(() => loadConfig({ DATABASE_URL: 'postgres://x/y', TRAINSYNC_SCHEDULE_SPREAD: 'soon' })).toThrow(/TRAINSYNC_SCHEDULE_SPREAD: got "soon"; expected a window up to 24h/);
  });
});
