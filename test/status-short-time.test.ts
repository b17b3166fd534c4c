import { describe, expect, it } from 'vitest';
import { shortTime } from '../src/commands/render/status-render.ts';

describe('shortTime', () => {
  it('gives HH:MM (UTC) for a moment of the reader\'s day, the day otherwise', () => {
    const now = new Date('2026-11-28T00:03:00Z');
    expect(shortTime(new Date('2026-11-28T00:01:30Z'), now)).toBe('00:01');
    expect(shortTime(new Date('2026-11-27T23:59:00Z'), now)).toBe('2026-11-27');
    expect(shortTime(new Date('2025-11-28T00:01:00Z'), now)).toBe('2025-11-28');
  });
});
