import { resolve } from 'node:path';
import type { Kysely } from 'kysely';
import type { Database } from '../warehouse/database.ts';
import { recordFeed } from './apply/feeds-store.ts';
import { decideFeedShrink, feedDataRows, type ShrinkDecision } from './feed/shrink-guard.ts';
import type { FeedFormat, FeedReadResult } from './feed/types.ts';
import { countKnownActive } from './apply/identities-store.ts';
import type { PlanMode } from './plan/types.ts';

export interface FeedShrinkCheck {
  decision: ShrinkDecision;
  dataRows: number;
  activeEmployees: number;
  minSharePercent: number;
}

export interface FeedShrinkOptions {
  file: string;
  format: FeedFormat;
  mode: PlanMode;
  dryRun: boolean;
  allowShrink: boolean;
  minSharePercent: number;
  shareSetting?: string | undefined;
}

/**
 * The feed-shrink guard (feed/shrink-guard.ts) on a feed just read, before anything is
 * planned: counts the organisation's known active employees, decides, and records a refused
 * feed in trainsync.feeds (reason `empty-feed` or `feed-shrink`) so the console lists it.
 * A feed with file errors is left to the planner, whose refusal names those errors.
 */
export async function checkFeedShrink(db: Kysely<Database>, org: string, feed: FeedReadResult, options: FeedShrinkOptions): Promise<FeedShrinkCheck> {
  const dataRows = feedDataRows(feed);
  if (feed.fileErrors.length > 0 || options.mode !== 'full' || options.allowShrink) {
    return { decision: { refused: false }, dataRows, activeEmployees: 0, minSharePercent: options.minSharePercent };
  }
  const activeEmployees = await countKnownActive(db, org);
  const decision = decideFeedShrink({ mode: options.mode, dataRows, activeEmployees, minSharePercent: options.minSharePercent, allowShrink: options.allowShrink, shareSetting: options.shareSetting });
  if (decision.refused) {
    await recordFeed(db, org, {
      hash: feed.hash,
      path: resolve(options.file),
      format: options.format,
      mode: options.mode,
      dryRun: options.dryRun,
      rows: feed.rows.length,
      errors: feed.errors.length,
      actions: 0,
      refused: decision.reason,
    });
  }
  return { decision, dataRows, activeEmployees, minSharePercent: options.minSharePercent };
}
