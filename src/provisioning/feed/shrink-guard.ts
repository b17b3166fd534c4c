import type { FeedReadResult } from './types.ts';
import type { PlanMode } from '../plan/types.ts';

/**
 * The feed-shrink guard: a full feed is the whole workforce, so every active employee it
 * does not list is a leaver. An export that failed upstream (a header and no rows, a file
 * cut short) would make most of the organisation leavers; this guard refuses such a feed
 * before anything is planned, read from the platform or written. The last snapshot
 * (training.employees, as `load-feed` left it) is the same statement one step later: the
 * employees it marks removed are leavers by absence for `reconcile --fix`, so it meets the
 * same rule with its listed employees as rows. Pure: the pipeline (pipeline/shrink.ts)
 * counts, this decides (docs/it-admin.md, "Feeds that shrink", has the argument why it
 * cannot let an accident through).
 */

export interface ShrinkGuardInput {
  mode: PlanMode;
  /** Data rows the feed holds (valid and rejected alike; the header is not one). */
  dataRows: number;
  /** Active employees trainsync knows for the organisation (see countKnownActive). */
  activeEmployees: number;
  /** TRAINSYNC_FEED_MIN_SHARE (or the organisation's feedMinShare): a whole percent, 0..100. */
  minSharePercent: number;
  /** `--allow-shrink`: the person running it says the feed is right. */
  allowShrink: boolean;
  /** Where the share was set, for the message; default TRAINSYNC_FEED_MIN_SHARE. */
  shareSetting?: string | undefined;
  /** What is counted: a feed's data rows (default), or the snapshot's listed employees (`reconcile --fix`). */
  subject?: 'feed' | 'snapshot' | undefined;
}

export type ShrinkRefusalReason = 'empty-feed' | 'feed-shrink';

export type ShrinkDecision =
  | { refused: false }
  | {
      refused: true;
      reason: ShrinkRefusalReason;
      /** The least number of rows the feed needed (ceil(share × active employees), at least 1). */
      needed: number;
      /** A full sentence: rows read, active employees known, the share, the flag. */
      message: string;
    };

/** Rows a feed needs: ceil(share% × active), in integers (no float rounding), and never 0 (an empty full feed is never right). */
export function rowsNeeded(activeEmployees: number, minSharePercent: number): number {
  return Math.max(1, Math.ceil((activeEmployees * minSharePercent) / 100));
}

/** Refused exactly when: full mode, no --allow-shrink, and fewer data rows than rowsNeeded. */
export function decideFeedShrink(input: ShrinkGuardInput): ShrinkDecision {
  const { mode, dataRows, activeEmployees, minSharePercent, allowShrink } = input;
  // A delta feed lists changes only: an employee it leaves out keeps their access.
  if (mode !== 'full' || allowShrink) return { refused: false };
  const needed = rowsNeeded(activeEmployees, minSharePercent);
  if (dataRows >= needed) return { refused: false };
  const known = `${activeEmployees} active employee${activeEmployees === 1 ? '' : 's'} known`;
  const setting = input.shareSetting ?? 'TRAINSYNC_FEED_MIN_SHARE';
  if (input.subject === 'snapshot') {
    return {
      refused: true,
      reason: dataRows === 0 ? 'empty-feed' : 'feed-shrink',
      needed,
      message:
        `the last HR snapshot (training.employees) lists ${dataRows} employee${dataRows === 1 ? '' : 's'}, fewer than ${minSharePercent}% of the ${known} (${needed} needed, ${setting}); ` +
        'everyone it marks removed would be disabled, so nothing was planned. A feed cut short loaded with load-feed looks like this: load the whole feed again. ' +
        'If the snapshot is right, run reconcile --fix with --allow-shrink (the disable limit still stands behind it).',
    };
  }
  if (dataRows === 0) {
    return {
      refused: true,
      reason: 'empty-feed',
      needed,
      message:
        `the feed has 0 data rows (a header only, or nothing), and in full mode every one of the ${known} would be a leaver; ` +
        'nothing was planned. An export that failed upstream looks like this: check the HR export. ' +
        'If the organisation really has no employees left, rerun with --allow-shrink.',
    };
  }
  return {
    refused: true,
    reason: 'feed-shrink',
    needed,
    message:
      `the feed has ${dataRows} data row${dataRows === 1 ? '' : 's'}, fewer than ${minSharePercent}% of the ${known} (${needed} needed, ${setting}); ` +
      'in full mode everyone it leaves out would be a leaver, so nothing was planned. A feed cut short, or a partial export, looks like this: check it with --dry-run --allow-shrink. ' +
      'If it is right, rerun with --allow-shrink (or --mode delta if it lists changes only).',
  };
}

/**
 * The feed's data rows: every line that held a row, valid or rejected (a rejected row is
 * still someone). Each valid row has a line of its own; the lines with errors are added, less
 * any that are a valid row's too (no set of every row's line: 300,000 of them took 19 MB).
 */
export function feedDataRows(feed: Pick<FeedReadResult, 'rows' | 'errors'>): number {
  const errorLines = new Set(feed.errors.map((e) => e.line));
  if (errorLines.size === 0) return feed.rows.length;
  let both = 0;
  for (const row of feed.rows) if (errorLines.has(row.line)) both += 1;
  return feed.rows.length + errorLines.size - both;
}
