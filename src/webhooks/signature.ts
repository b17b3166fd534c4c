import { createHmac, timingSafeEqual } from 'node:crypto';
import { BASE64_RE } from '../settings/webhook-secrets.ts';

/**
 * The platform signs every event (except TEST_EVENT) with an HMAC-SHA256 of the raw
 * request body, keyed by the webhook's validation secret decoded from the base64 text
 * the platform shows once. The header's encoding is undocumented: base64 and hex are
 * both accepted, and every comparison is constant-time on equal-length buffers.
 */
const HEX_DIGEST_RE = /^[0-9a-fA-F]{64}$/;
const DIGEST_BYTES = 32;

/** The signature a body should carry under `key`, in either encoding (the simulator signs independently). */
export function expectedSignature(body: Buffer, key: Buffer): Buffer {
  return createHmac('sha256', key).update(body).digest();
}

/** A header token as raw digest bytes: 64 hex digits, or base64 (standard or URL-safe) of 32 bytes. */
function decodeToken(token: string): Buffer | undefined {
  const bare = token.replace(/^sha256=/i, '');
  if (HEX_DIGEST_RE.test(bare)) return Buffer.from(bare, 'hex');
  if (!BASE64_RE.test(bare)) return undefined;
  const bytes = Buffer.from(bare, 'base64');
  return bytes.length === DIGEST_BYTES ? bytes : undefined;
}

export type SignatureCheck = 'valid' | 'missing' | 'invalid';

/**
 * Checks the header value(s) against every key. A header repeated, or a value listing
 * several signatures (comma- or space-separated, `sha256=` prefix allowed), is valid
 * when any one of them matches any key: each candidate is a full HMAC comparison.
 */
export function verifySignature(body: Buffer, headerValues: readonly string[], keys: readonly Buffer[]): SignatureCheck {
  const tokens = headerValues.flatMap((value) => value.split(/[\s,]+/)).filter((token) => token !== '');
  if (tokens.length === 0) return 'missing';
  const expected = keys.map((key) => expectedSignature(body, key));
  let valid = false;
  for (const token of tokens) {
    const given = decodeToken(token);
    if (given === undefined || given.length !== DIGEST_BYTES) continue;
    // No early exit: the time taken does not depend on which key or token matched.
    for (const digest of expected) if (timingSafeEqual(given, digest)) valid = true;
  }
  return valid ? 'valid' : 'invalid';
}

/** A setting of the header name: an exact name, or `*-Suffix` for any name ending so (case-insensitive). */
export function signatureHeaderMatcher(setting: string): (headerName: string) => boolean {
  const wanted = setting.trim().toLowerCase();
  if (wanted.startsWith('*')) {
    const suffix = wanted.slice(1);
    return (name) => name.toLowerCase().endsWith(suffix) && name.length > suffix.length;
  }
  return (name) => name.toLowerCase() === wanted;
}

/** The signature header values of a request, from node's raw header list (name, value, name, value…). */
export function signatureHeaderValues(rawHeaders: readonly string[], matches: (headerName: string) => boolean): string[] {
  const values: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) if (matches(rawHeaders[i]!)) values.push(rawHeaders[i + 1]!);
  return values;
}
