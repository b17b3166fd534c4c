import { describe, expect, it } from 'vitest';
import { isCanonicalGuid, normaliseGuid, normaliseInstant, resultSchema } from '../src/platform/schemas.ts';

describe('platform value normalisation', () => {
  it('stores every timestamp form the platform may send as one unambiguous instant', () => {
    expect(normaliseInstant('2024-03-01T10:00:00.123Z')).toBe('2024-03-01T10:00:00.123000+00:00');
    expect(normaliseInstant('2024-03-01T10:00:00')).toBe('2024-03-01T10:00:00.000000+00:00');
    expect(normaliseInstant('2024-03-01T10:00:00.1234567+00:00')).toBe('2024-03-01T10:00:00.123456+00:00');
    expect(normaliseInstant('2024-03-01T10:00:00.5+0200')).toBe('2024-03-01T10:00:00.500000+02:00');
    expect(normaliseInstant('2024-02-29T23:59:59.999Z')).toBe('2024-02-29T23:59:59.999000+00:00');
  });

  it('refuses dates the calendar does not have, which JavaScript would roll over and Postgres would refuse', () => {
    for (const bad of ['2024-02-30T10:00:00.123Z', '2023-02-29T10:00:00Z', '2024-04-31T00:00:00+02:00', '2024-01-01T25:00:00.000Z', 'yesterday']) {
      expect(normaliseInstant(bad)).toBeUndefined();
    }
  });

  it('lower-cases GUIDs and accepts the braces and bare forms .NET writes', () => {
    expect(normaliseGuid('abcdef01-2345-6789-abcd-ef0123456789')).toBe('abcdef01-2345-6789-abcd-ef0123456789');
    expect(normaliseGuid('{ABCDEF01-2345-6789-ABCD-EF0123456789}')).toBe('abcdef01-2345-6789-abcd-ef0123456789');
    expect(normaliseGuid('ABCDEF0123456789ABCDEF0123456789')).toBe('abcdef01-2345-6789-abcd-ef0123456789');
    expect(normaliseGuid('not-a-guid')).toBeUndefined();
  });

  it('takes as canonical only 36 characters of lower-case hex with the four hyphens in place, character by character', () => {
    const good = 'abcdef01-2345-6789-abcd-ef0123456789';
    expect(isCanonicalGuid(good)).toBe(true);
    // Each position with each near miss: the neighbours of 0-9 and a-f, upper case, a hyphen, non-ASCII.
    for (let i = 0; i < good.length; i++) {
      const misses = good[i] === '-' ? ['0', 'a', '_', ' '] : ['/', ':', '`', 'g', 'A', 'F', '-', 'é', '\u0130'];
      for (const miss of misses) {
        const bad = `${good.slice(0, i)}${miss}${good.slice(i + 1)}`;
        expect(isCanonicalGuid(bad), bad).toBe(false);
        // The same answer as the definition: a regex of the canonical form.
        expect(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(bad)).toBe(false);
      }
    }
    for (const bad of ['', good.slice(1), `${good}0`, `{${good}}`, good.toUpperCase()]) expect(isCanonicalGuid(bad), bad).toBe(false);
  });

  it('turns a result with an impossible date into a validation problem naming the field', () => {
    const id = 'abcdef01-2345-6789-abcd-ef0123456789';
    const parsed = resultSchema.safeParse({ id, userId: id, courseId: id, isComplete: true, dateCompleted: '2024-02-30T10:00:00.000Z' });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.path).toEqual(['dateCompleted']);
  });
});
