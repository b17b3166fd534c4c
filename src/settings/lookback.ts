/**
 * The results lookback: whole days ("7") or an ISO-8601 duration of days or weeks
 * ("P7D", "P2W"). Hours and months are refused: a month has no fixed length and the
 * platform's date filters are day-grained, so only whole days are unambiguous.
 */
export function parseLookback(value: string): number | undefined {
  const text = value.trim().toUpperCase();
  if (/^\d+$/.test(text)) return Number(text);
  const match = /^P(?:(\d+)W)?(?:(\d+)D)?$/.exec(text);
  if (!match || (match[1] === undefined && match[2] === undefined)) return undefined;
  return Number(match[1] ?? 0) * 7 + Number(match[2] ?? 0);
}
