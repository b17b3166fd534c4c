import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decryptSecret, encryptSecret, generatePassword, SecretError } from '../src/provisioning/apply/secrets.ts';

const key = randomBytes(32);

describe('encryptSecret / decryptSecret', () => {
  it('round-trips, with a fresh IV each time, in the compact v1 format', () => {
    const a = encryptSecret(key, 'Pässword #1');
    const b = encryptSecret(key, 'Pässword #1');
    expect(a).toMatch(/^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]+$/);
    expect(a).not.toBe(b);
    expect(a).not.toContain('Pässword');
    expect(decryptSecret(key, a)).toBe('Pässword #1');
    expect(decryptSecret(key, b)).toBe('Pässword #1');
  });

  it('detects tampering with the ciphertext, the tag or the iv', () => {
    const token = encryptSecret(key, 'secret-value');
    const parts = token.split('.');
    const flip = (text: string): string => {
      const bytes = Buffer.from(text, 'base64url');
      bytes[0] = bytes[0]! ^ 1;
      return bytes.toString('base64url');
    };
    for (const index of [1, 2, 3]) {
      const altered = [...parts];
      altered[index] = flip(altered[index]!);
      expect(() => decryptSecret(key, altered.join('.'))).toThrow(SecretError);
    }
    expect(() => decryptSecret(key, 'v2.a.b.c')).toThrow(/not an encrypted secret/);
    expect(() => decryptSecret(key, parts.slice(0, 3).join('.'))).toThrow(/not an encrypted secret/);
  });

  it('refuses a wrong key, and a token bound to another e-mail', () => {
    const token = encryptSecret(key, 'secret-value', 'ann@example.com');
    expect(() => decryptSecret(randomBytes(32), token, 'ann@example.com')).toThrow(/altered, or it was encrypted with another TRAINSYNC_SECRET_KEY/);
    expect(() => decryptSecret(key, token, 'bob@example.com')).toThrow(SecretError);
    expect(() => decryptSecret(key, token)).toThrow(SecretError);
    expect(decryptSecret(key, token, 'ann@example.com')).toBe('secret-value');
    expect(() => encryptSecret(randomBytes(16), 'x')).toThrow(/must be 32 bytes/);
  });
});

describe('generatePassword', () => {
  it('gives 20 characters with every class, and no two alike', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 200; i += 1) {
      const password = generatePassword();
      expect(password).toHaveLength(20);
      expect(password).toMatch(/[A-Z]/);
      expect(password).toMatch(/[a-z]/);
      expect(password).toMatch(/[0-9]/);
      expect(password).toMatch(/[^A-Za-z0-9]/);
      expect(password).not.toMatch(/[0O1lI]/);
      seen.add(password);
    }
    expect(seen.size).toBe(200);
    expect(generatePassword(32)).toHaveLength(32);
  });
});
