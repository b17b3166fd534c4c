/**
 * The types every job sees. Here in src/queue, beside defineJob and the runner that builds
 * a context, so the queue imports nothing of the runtime; the runtime's app fills in Services.
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
 * - org:        one organisation on the platform (one API key), named by its slug; every
 *               job, row and request belongs to one (a single deployment's is `default`).
 */
import type { Config } from '../config.ts';
import type { OrgSettings } from '../settings/orgs-file.ts';
import type { Logger } from 'pino';
import type { PlatformClient } from '../platform/types.ts';
import type { ActionQueue } from './action-queue.ts';
import type { AdvisoryLocks } from '../warehouse/lock-session.ts';
import type { OrgScope } from '../warehouse/scope.ts';

/** What a running job knows about itself (from BullMQ), without exposing BullMQ types. */
export interface JobInfo {
  id: string;
  name: string;
  attemptsMade: number;
}

/** The parts of a process a job may use; the worker adds what belongs to one job. */
export interface Services {
  config: Config;
  /** The organisation this work is for: its slug goes into every row, key, label and log line. */
  org: OrgSettings;
  /**
   * The organisation's scoped handle (src/warehouse/scope.ts): Postgres shows its
   * statements this organisation's rows only, and the stores read the organisation from it.
   * Its `db` is Kysely, its `lend` the raw pg client COPY needs, its `transaction` both.
   */
  scope: OrgScope;
  /** The process's advisory locks, all on one session of their own (never a pooled connection). */
  locks: AdvisoryLocks;
  platform: PlatformClient;
  /** Enqueues provisioning actions (the scheduled `reconcile --fix` plans and enqueues them). */
  actions: ActionQueue;
}

export interface JobContext extends Services {
  job: JobInfo;
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
