import { describe, expect, it } from 'vitest';
import { addDays, splitWindows, windowKey, windowQuery } from '../src/sync/results/days.ts';
import { FLOOR_DAY, fromDay, planWalk } from '../src/sync/results/walk-plan.ts';

describe('result windows', () => {
  it('splits a range into windows that cover every day exactly once', () => {
    const windows = splitWindows('2024-02-25', '2024-03-10', 7);
    expect(windows).toEqual([
      { start: '2024-02-25', end: '2024-03-03' },
      { start: '2024-03-03', end: '2024-03-10' },
    ]);
    expect(splitWindows('2024-01-01', '2024-01-03', 7)).toEqual([{ start: '2024-01-01', end: '2024-01-03' }]);
    expect(splitWindows('2024-01-03', '2024-01-03', 7)).toEqual([]);
  });

  it('as date-times, asks for exactly its days under an exclusive or an inclusive reading', () => {
    const query = windowQuery({ start: '2024-03-01', end: '2024-03-08' }, 'instant');
    expect(query).toEqual({ startDate: '2024-02-29T23:59:59.999Z', endDate: '2024-03-08T00:00:00.000Z' });
    const from = Date.parse(query.startDate);
    const to = Date.parse(query.endDate);
    for (const instant of ['2024-03-01T00:00:00.000Z', '2024-03-07T23:59:59.999Z']) {
      const t = Date.parse(instant);
      expect(t > from && t < to).toBe(true);
    }
    // The day after the window is outside it under an exclusive reading, and only its first instant under an inclusive one.
    expect(Date.parse('2024-03-08T00:00:00.001Z') <= to).toBe(false);
  });

  it('asks a day more on each side, so any reading of the bounds covers the window', () => {
    const query = windowQuery({ start: '2024-03-01', end: '2024-03-08' }, 'day');
    expect(query).toEqual({ startDate: '2024-02-29', endDate: '2024-03-09' });
    // Exclusive instants (startDate, endDate) at midnight UTC contain all of [start, end).
    const from = Date.parse(`${query.startDate}T00:00:00Z`);
    const to = Date.parse(`${query.endDate}T00:00:00Z`);
    for (const instant of ['2024-03-01T00:00:00Z', '2024-03-07T23:59:59.999Z']) {
      const t = Date.parse(instant);
      // Exclusive bounds read at midnight in any zone from UTC-23h to UTC+23h still contain it.
      for (let shiftHours = -23; shiftHours <= 23; shiftHours += 1) {
        const shift = shiftHours * 3_600_000;
        expect(t > from + shift && t < to + shift).toBe(true);
      }
    }
    // An instant outside the window, two days on, is not what the window is for.
    expect(Date.parse('2024-03-09T12:00:00Z') < to).toBe(false);
  });

  it('crosses month and leap-year ends', () => {
    expect(addDays('2024-02-28', 1)).toBe('2024-02-29');
    expect(addDays('2024-03-01', -1)).toBe('2024-02-29');
    expect(addDays('2023-12-31', 1)).toBe('2024-01-01');
    expect(windowKey({ start: '2024-01-01', end: '2024-01-08' })).toBe('2024-01-01..2024-01-08');
    expect(() => splitWindows('2024-13-01', '2024-12-01', 7)).toThrow(/not a date/);
  });
});

describe('how a first load or full walk reads the list', () => {
  const facts = { total: 100_000, firstPageSize: 50, earliest: '2024-01-01T08:00:00.000Z', openDay: '2024-12-31', windowPages: 64 };

  it('by windows of about the pages asked for, each of whole days, the first reaching back to the floor and the last ending where the run’s day begins', () => {
    const shape = planWalk(facts);
    if (shape.kind !== 'windows') throw new Error(`walked whole: ${shape.why}`);
    // 2,000 pages in windows of 64: 31 windows over the 365 days before the run's day.
    expect(shape.windows.length).toBe(31);
    expect(shape.windows[0]!.start).toBe(FLOOR_DAY);
    expect(shape.windows[1]!.start).toBe(addDays('2024-01-01', 12));
    expect(shape.windows.at(-1)!.end).toBe('2024-12-31');
    for (let i = 1; i < shape.windows.length; i++) expect(shape.windows[i]!.start).toBe(shape.windows[i - 1]!.end);
    expect(shape).toMatchObject({ openDay: '2024-12-31', pageSize: 50, listTotal: 100_000 });
  });

  it('whole when windows would not pay: fewer than four windows of pages, one page, no dated result on the first page, or nothing before the run’s day', () => {
    expect(planWalk({ ...facts, total: (4 * 64 - 1) * 50 })).toMatchObject({ kind: 'whole', why: expect.stringContaining('fewer than 4 windows of 64') });
    expect(planWalk({ ...facts, total: 4 * 64 * 50 }).kind).toBe('windows');
    expect(planWalk({ ...facts, total: 30, firstPageSize: 30 })).toMatchObject({ kind: 'whole' });
    expect(planWalk({ ...facts, earliest: undefined })).toMatchObject({ kind: 'whole', why: expect.stringContaining('no dated result') });
    expect(planWalk({ ...facts, earliest: '2024-12-31T01:00:00.000Z' })).toMatchObject({ kind: 'whole' });
  });

  it('never more windows than days', () => {
    const shape = planWalk({ ...facts, earliest: '2024-12-28T10:00:00.000Z' });
    expect(shape).toMatchObject({ kind: 'windows', windows: [{ start: FLOOR_DAY, end: '2024-12-29' }, { start: '2024-12-29', end: '2024-12-30' }, { start: '2024-12-30', end: '2024-12-31' }] });
  });

  it('the open window asks for results from the start of the run’s day on, under either reading of the bound', () => {
    expect(fromDay('2024-12-31')).toBe('2024-12-30T23:59:59.999Z');
  });
});
