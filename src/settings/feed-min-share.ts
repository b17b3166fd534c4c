/**
 * TRAINSYNC_FEED_MIN_SHARE (and an organisation's `feedMinShare`): the share of the active
 * employees trainsync knows that a full feed must list, as a whole percentage. Here, beside
 * the other settings parsers, so src/config.ts and the orgs file read it the same way.
 */

export const DEFAULT_FEED_MIN_SHARE = 50;

const HINT = 'a whole percentage from 0 to 100, e.g. 50% (0 refuses only a feed without rows)';

/** "50%", "50" or 50 → 50; anything else → the problem in words. */
export function parseFeedMinShare(value: string | number): number | string {
  const text = String(value).trim();
  const match = /^(\d{1,3})\s*%?$/.exec(text);
  if (!match) return HINT;
  const percent = Number(match[1]);
  return percent <= 100 ? percent : HINT;
}
