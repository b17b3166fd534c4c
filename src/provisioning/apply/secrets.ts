import { TrainsyncError } from '../../lib/errors.ts';
import { createCipheriv, createDecipheriv, randomBytes, randomInt } from 'node:crypto';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Thrown when a secret cannot be decrypted: tampered, truncated, or another key. */
export class SecretError extends TrainsyncError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { code: 'SECRET_UNREADABLE', retryable: false, cause: options?.cause });
    this.name = 'SecretError';
  }
}

function checkKey(key: Buffer): void {
  if (key.length !== 32) throw new SecretError(`the secret key must be 32 bytes (AES-256), got ${key.length}; see TRAINSYNC_SECRET_KEY`);
}

/**
 * Encrypts a secret (a password inside a queued job) with AES-256-GCM:
 * `v1.<iv>.<tag>.<ciphertext>`, each part base64url. `aad` (e.g. the employee's
 * e-mail) binds the ciphertext to its subject, so a token copied into another
 * employee's job does not decrypt.
 */
export function encryptSecret(key: Buffer, plaintext: string, aad?: string): string {
  checkKey(key);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
  if (aad !== undefined) cipher.setAAD(Buffer.from(aad, 'utf8'));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  const tag = cipher.getAuthTag();
  return [VERSION, iv.toString('base64url'), tag.toString('base64url'), body.toString('base64url')].join('.');
}

/** Decrypts `encryptSecret`'s token; throws SecretError on tampering, a wrong key or a wrong `aad`. */
export function decryptSecret(key: Buffer, token: string, aad?: string): string {
  checkKey(key);
  const parts = token.split('.');
  if (parts.length !== 4 || parts[0] !== VERSION) {
    throw new SecretError(`not an encrypted secret (expected "${VERSION}.<iv>.<tag>.<ciphertext>")`);
  }
  const [, ivText, tagText, bodyText] = parts as [string, string, string, string];
  const iv = Buffer.from(ivText, 'base64url');
  const tag = Buffer.from(tagText, 'base64url');
  if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) throw new SecretError('the encrypted secret is malformed (bad iv or tag length)');
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
    if (aad !== undefined) decipher.setAAD(Buffer.from(aad, 'utf8'));
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(Buffer.from(bodyText, 'base64url')), decipher.final()]).toString('utf8');
  } catch (error) {
    throw new SecretError('the secret cannot be decrypted: it was altered, or it was encrypted with another TRAINSYNC_SECRET_KEY (or for another user)', { cause: error });
  }
}

const UPPER = 'ABCDEFGHJKLMNPQRSTUVWXYZ';
const LOWER = 'abcdefghijkmnopqrstuvwxyz';
const DIGITS = '23456789';
// Symbols that survive shells, CSV and URL forms unquoted.
const SYMBOLS = '!#%*+-=?@^_';
const ALL = UPPER + LOWER + DIGITS + SYMBOLS;

/**
 * A strong random password (crypto RNG): `length` characters (default 20) with at
 * least one upper-case letter, lower-case letter, digit and symbol; look-alike
 * characters (0/O, 1/l/I) are left out because people sometimes type these.
 */
export function generatePassword(length = 20): string {
  if (length < 4) throw new RangeError('a password needs at least 4 characters');
  const chars = [UPPER, LOWER, DIGITS, SYMBOLS].map((set) => set[randomInt(set.length)]!);
  while (chars.length < length) chars.push(ALL[randomInt(ALL.length)]!);
  for (let i = chars.length - 1; i > 0; i -= 1) {
    const j = randomInt(i + 1);
    [chars[i], chars[j]] = [chars[j]!, chars[i]!];
  }
  return chars.join('');
}
