/**
 * The types every job sees.
 *
 * Glossary
 * - resource:   one kind of platform data we copy (courses, filters, results, seats, users).
 * - window:     a date range of results [start, end) read as one paged query.
 * - checkpoint: a row in `trainsync.checkpoints` that says a window (or page) is done;
 *               it commits in the same transaction as the rows it covers.
 * - run:        one execution of a sync job, recorded in `trainsync.runs` with its counts.
 * - action:     one provisioning change for one employee (create, disable, enable,
 *               add to group, remove from group, set password).
 * - identity:   an employee's e-mail, HR employee id and platform user id, kept together.
 */
import type { Kysely } from 'kysely';
import type { Pool } from 'pg';
import type { Config } from './config.ts';
import type { Logger } from './log.ts';
import type { PlatformClient } from './platform/types.ts';
import type { Database } from './warehouse/database.ts';

export interface JobContext {
  config: Config;
  db: Kysely<Database>;
  /** The raw pool, for COPY streams that kysely does not wrap. */
  pool: Pool;
  platform: PlatformClient;
  log: Logger;
  /** Aborted on shutdown: long jobs checkpoint and stop at the next page. */
  signal: AbortSignal;
  /** Reports progress (pages done, rows) to the CLI's progress line and to BullMQ. */
  progress: (update: ProgressUpdate) => void;
}

export interface ProgressUpdate {
  resource: string;
  pages: number;
  rows: number;
  windowsDone?: number;
  windowsTotal?: number;
}
