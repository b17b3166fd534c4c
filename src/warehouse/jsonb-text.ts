/**
 * JSON text Postgres accepts as jsonb: text and jsonb cannot hold NUL (U+0000), so a
 * NUL inside a string from the platform is dropped rather than failing a whole batch.
 */
export function jsonbText(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'string' && v.includes('\0') ? v.replaceAll('\0', '') : v)) ?? 'null';
}
