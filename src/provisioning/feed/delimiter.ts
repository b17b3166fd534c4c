import { FEED_DELIMITERS, type FeedDelimiter } from './types.ts';

/** How a delimiter is named in messages and profiles. */
export function delimiterName(delimiter: FeedDelimiter | string): string {
  return delimiter === '\t' ? 'tab' : JSON.stringify(delimiter);
}

/**
 * The separator of a CSV header line: the most frequent of `,` `;` tab `|` outside
 * double quotes (a header such as `"Name, full";Email` is semicolon-separated). A tie,
 * or a one-column header, means comma. Excel writes `;` where the decimal mark is a
 * comma, so a European export must read without any option.
 */
export function detectDelimiter(headerLine: string): FeedDelimiter {
  const counts = new Map<FeedDelimiter, number>(FEED_DELIMITERS.map((d) => [d, 0]));
  let quoted = false;
  for (const c of headerLine) {
    if (c === '"') quoted = !quoted;
    else if (!quoted && counts.has(c as FeedDelimiter)) counts.set(c as FeedDelimiter, counts.get(c as FeedDelimiter)! + 1);
  }
  let best: FeedDelimiter = ',';
  for (const d of FEED_DELIMITERS) if (counts.get(d)! > counts.get(best)!) best = d;
  return best;
}
