import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { databaseFingerprint, fingerprintOf, keyFingerprint, parsePublished, settingsDifferences } from '../src/queue/worker-settings.ts';

/**
 * What a worker publishes of its settings, and what a command prints of the difference,
 * never carries a secret: the key only as 8 hex digits of its SHA-256, the database
 * without its user or password; a published value that is not ours reads as none.
 */
describe('worker settings fingerprints', () => {
  const secret = fc.string({ minLength: 3, maxLength: 40 }).filter((s) => s.trim().length >= 3);

  it('any API key and database password: neither appears in the fingerprint nor in the differences', () => {
    fc.assert(
      fc.property(secret, secret, secret, fc.stringMatching(/^[a-z][a-z0-9_]{0,20}$/), (keyA, keyB, password, dbName) => {
        const url = `postgres://app:${encodeURIComponent(password)}@db.example:5433/${dbName}`;
        const mine = fingerprintOf({ DATABASE_URL: url }, { apiUrl: 'https://a.example/base', apiKey: keyA })!;
        const theirs = fingerprintOf({ DATABASE_URL: 'postgres://app@db.example:5433/other' }, { apiUrl: 'https://b.example', apiKey: keyB })!;
        const text = JSON.stringify(mine) + settingsDifferences(theirs, mine).join(' ');
        expect(mine.key).toMatch(/^[0-9a-f]{8}$/);
        expect(mine.database).toBe(`db.example:5433/${dbName}`);
        for (const value of [keyA, password, encodeURIComponent(password)]) if (!/^[0-9a-f]+$/.test(value) && value.length >= 8) expect(text).not.toContain(value);
        expect(text).not.toContain('app:');
      }),
    );
  });

  it('names exactly the settings that differ', () => {
    const base = fingerprintOf({ DATABASE_URL: 'postgres://u:p@h:5432/a' }, { apiUrl: 'http://p.example:4000/x', apiKey: 'k1' })!;
    expect(settingsDifferences(base, base)).toEqual([]);
    expect(settingsDifferences({ ...base, key: keyFingerprint('k2') }, base)).toEqual([expect.stringMatching(/^API key \(sha256 [0-9a-f]{8}… on the worker, [0-9a-f]{8}… here\)$/)]);
    expect(settingsDifferences({ ...base, origin: 'http://q.example' }, base)).toEqual(['platform origin (worker http://q.example, here http://p.example:4000)']);
    expect(settingsDifferences({ ...base, database: databaseFingerprint('postgres://h:5432/b') }, base)).toEqual(['database (worker h:5432/b, here h:5432/a)']);
  });

  it('any published value that is not a fingerprint reads as none (a command then claims no difference)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.json(), fc.constant(null)), (value) => {
        const parsed = parsePublished(value);
        if (parsed !== undefined) expect(Object.keys(parsed).sort()).toEqual(['database', 'key', 'origin']);
      }),
    );
  });
});
