/**
 * Whether a failure to store a webhook event is the event's own (the same bytes fail the
 * same way on every delivery) rather than the database's (down, busy: worth a retry).
 * Postgres's class 22 "data exception" is the event's: a `\u0000` (NUL) or a lone UTF-16
 * surrogate escaped in the JSON, which neither `text` nor `jsonb` can hold, a number out
 * of range. Answering those 503 made the platform retry one bad event for days.
 */
export function unstorableReason(error: unknown): string | undefined {
  const code = typeof error === 'object' && error !== null && 'code' in error ? (error as { code: unknown }).code : undefined;
  if (typeof code !== 'string' || !code.startsWith('22')) return undefined;
  switch (code) {
    case '22P05':
    case '22021':
      return 'it holds a character the database cannot store (a \\u0000 or an unpaired surrogate)';
    case '22003':
      return 'a number in it is out of range';
    default:
      return `the database refused one of its values (SQLSTATE ${code})`;
  }
}
