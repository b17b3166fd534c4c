import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * A static bearer token's check (the /metrics token). Both sides are hashed first, so the
 * comparison is of equal lengths and takes the same time whatever was sent: neither the
 * token's length nor a matching prefix leaks. SCIM checks its tokens with it too.
 */
export function bearerTokenMatcher(token: Buffer): (authorization: string | undefined) => boolean {
  const expected = createHash('sha256').update(token).digest();
  return (authorization) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    const given = createHash('sha256').update(match?.[1] ?? '').digest();
    // Computed even without a token, so a missing header takes as long as a wrong one.
    const equal = timingSafeEqual(given, expected);
    return match !== null && equal;
  };
}
