import { sql, type Kysely } from 'kysely';
import type { Database } from '../../warehouse/database.ts';
import type { OrgDb } from '../../warehouse/scope.ts';

/**
 * The store of `trainsync.feeds`: every HR feed read (dry runs and refusals included), with
 * its hash. Every statement that names the table is here (test/table-owners.test.ts keeps
 * it so); the feed source, the shrink guard and the console call these functions.
 */

type Db = Kysely<Database>;

export interface FeedRecord {
  hash: string;
  path: string;
  format: 'csv' | 'jsonl';
  mode: 'full' | 'delta';
  dryRun: boolean;
  rows: number;
  errors: number;
  actions: number;
  /** The refusal's reason code; an unreadable feed's is `feed-errors: ` and its file errors. */
  refused: string | null;
}

/** Records a feed read. */
export async function recordFeed({ db, org }: OrgDb, feed: FeedRecord): Promise<void> {
  await db
    .insertInto('trainsync.feeds')
    .values({
      org,
      hash: feed.hash,
      path: feed.path,
      format: feed.format,
      mode: feed.mode,
      dry_run: feed.dryRun,
      rows: feed.rows,
      errors: feed.errors,
      actions: feed.actions,
      refused: feed.refused,
    })
    .execute();
}

/** The console's row of a feed read: the path's file name only. */
export interface FeedListRow {
  id: number;
  org: string;
  hash: string;
  path: string;
  mode: string;
  dry_run: boolean;
  rows: number;
  errors: number;
  actions: number;
  refused: string | null;
  created_at: Date;
}

/** The feeds `orgs` read, newest first. */
export async function recentFeedRows(db: Db, orgs: readonly string[], page: { limit: number; offset: number }): Promise<FeedListRow[]> {
  const { rows } = await sql<FeedListRow>`
    select id, org, hash, regexp_replace(path, '^.*/', '') as path, mode, dry_run, rows, errors, actions, refused, created_at
      from trainsync.feeds where org = any(${orgs}::text[]) order by id desc limit ${page.limit} offset ${page.offset}`.execute(db);
  return rows;
}
