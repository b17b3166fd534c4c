import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { shortTime } from '../src/commands/render/status-render.ts';

describe('shortTime', () => {
  it('always gives the date, the minute and the zone, as the console does (a bare 03:43 names no day)', () => {
    expect(shortTime(new Date('2026-11-28T00:01:30Z'))).toBe('2026-11-28 00:01 UTC');
    expect(shortTime(new Date('2026-11-27T23:59:00Z'))).toBe('2026-11-27 23:59 UTC');
    expect(shortTime(new Date('invalid'))).toBe('unknown time');
  });

  it('any moment reads back as the same minute', () => {
    fc.assert(
      fc.property(fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true }), (at) => {
        const shown = shortTime(at);
        expect(shown).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/);
        expect(new Date(`${shown.slice(0, 16).replace(' ', 'T')}:00Z`).getTime()).toBe(Math.floor(at.getTime() / 60_000) * 60_000);
      }),
    );
  });
});
