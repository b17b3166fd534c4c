import type { FeedStatus, StatusMap } from './types.ts';

/**
 * Status words are compared ignoring case and spacing: `Long-term leave`,
 * `long-term  LEAVE` and `Long-termleave` are one word. (Hyphens and other marks count.)
 */
export function normaliseStatusWord(word: string): string {
  return word.toLowerCase().replace(/\s+/g, '');
}

/** A profile's status map, keyed by normalised word. */
export function buildStatusMap(entries: Iterable<readonly [string, FeedStatus]>): Map<string, FeedStatus> {
  const map = new Map<string, FeedStatus>();
  for (const [word, status] of entries) map.set(normaliseStatusWord(word), status);
  return map;
}

/** The profile's meaning of a status value, or undefined to fall back on the built-in words. */
export function mapStatusWord(map: StatusMap | undefined, value: unknown): FeedStatus | undefined {
  if (map === undefined || map.size === 0 || typeof value !== 'string') return undefined;
  return map.get(normaliseStatusWord(value));
}
