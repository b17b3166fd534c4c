/**
 * How the CLI shows a moment: `2026-11-26 02:00 UTC`, as the console does (src/console/time.ts).
 * Date and zone always: a bare `03:43` read the next morning, or by an operator in another
 * zone, names the wrong moment.
 */
export function utcMinute(at: Date): string {
  if (Number.isNaN(at.getTime())) return 'unknown time';
  return `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}
