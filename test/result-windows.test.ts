import { describe, expect, it } from 'vitest';
import { addDays, splitWindows, windowKey, windowQuery } from '../src/sync/results/days.ts';

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
