import { basename, resolve } from 'node:path';
import type { App } from '../app.ts';
import { PlatformError } from '../platform/errors.ts';
import type { JobRegistry } from '../queue/registry.ts';
import { adoptExistingAccounts, listAllUsers } from './adopt.ts';
import { loadAppliedEmployees } from './applied-state.ts';
import { enqueuePlan, waitForActions, type ApplyResult, type EnqueueResult } from './apply-plan.ts';
import { recordFeed } from './audit.ts';
import { feedFormatFor, readFeed } from './feed-read.ts';
import type { ColumnMap, FeedFormat, FeedReadResult } from './feed-types.ts';
import { insertAdoptedIdentities } from './identities.ts';
import { planProvisioning } from './plan.ts';
import type { MaxDisable, Plan, PlanMode } from './plan-types.ts';

/** Serialises plan-and-enqueue between provisioning runs (any process, one database). */
const PROVISION_LOCK = 'trainsync:provision';

export interface ProvisionOptions {
  file: string;
  format?: FeedFormat | undefined;
  map?: ColumnMap | undefined;
  mode: PlanMode;
  dryRun: boolean;
  maxDisable?: MaxDisable | undefined;
  force: boolean;
  /** Called once the plan is known, before anything is enqueued (the CLI prints it). */
  onPlan?: (result: ProvisionResult) => void;
  onProgress?: (finished: number, total: number) => void;
}

export interface SeatsInfo {
  free: number | undefined;
  note: string;
}

export interface ProvisionResult {
  feed: FeedReadResult;
  plan: Plan;
  /** Accounts found on the platform and taken as identities (first run only). */
  adopted: number;
  adoptionNote?: string;
  seats: SeatsInfo;
  /** Set when the plan was applied (not a dry run, not refused). */
  applied?: ApplyResult;
}

/** Free seats from GET users/seats; undefined (no seat check) without an unlimited plan. */
export async function freeSeats(app: App): Promise<SeatsInfo> {
  try {
    const seats = await app.platform().getSeats();
    const free = Math.max(0, seats.totalSeats - seats.seatsInUse);
    return { free, note: `${seats.seatsInUse} of ${seats.totalSeats} seats in use, ${free} free` };
  } catch (error) {
    if (error instanceof PlatformError && error.code === 'NO_UNLIMITED_PLAN') return { free: undefined, note: 'seats: not applicable (NO_UNLIMITED_PLAN); creates are not checked against seats' };
    throw error;
  }
}

/**
 * What `trainsync provision` does, as a function: reads the feed, adopts existing
 * accounts on a first run, plans against the applied state and the free seats,
 * records the feed, and, unless it is a dry run or the plan is refused, enqueues
 * the actions and waits for them. Nothing is enqueued, and no identity written, when
 * the feed file itself cannot be read or a limit is exceeded without `force`.
 */
export async function provisionFeed(app: App, registry: JobRegistry, options: ProvisionOptions): Promise<ProvisionResult> {
  const format = options.format ?? feedFormatFor(options.file);
  const feed = await readFeed(options.file, { format, ...(options.map ? { map: options.map } : {}) });
  const file = basename(options.file);
  const lock = options.dryRun ? undefined : await app.pool.connect();
  let locked = false;
  let planned: ProvisionResult;
  let enqueued: EnqueueResult | undefined;
  try {
    if (lock) {
      await lock.query('select pg_advisory_lock(hashtext($1))', [PROVISION_LOCK]);
      locked = true;
    }
    const applied = await loadAppliedEmployees(app.db);
    let adopted: ReturnType<typeof adoptExistingAccounts> = [];
    let adoptionNote: string | undefined;
    let seats: SeatsInfo = { free: undefined, note: 'seats: not checked (the feed could not be read)' };
    if (feed.fileErrors.length === 0) {
      if (applied.length === 0 && feed.rows.length > 0) {
        const users = await listAllUsers(app.platform());
        if (users === undefined) adoptionNote = 'first run: the platform offers no GET users, so existing accounts could not be adopted; creates of existing e-mails adopt them one by one';
        else {
          adopted = adoptExistingAccounts(feed.rows, applied, users);
          adoptionNote = `first run: ${adopted.length} of ${users.length} existing accounts match feed rows and are adopted as known employees`;
        }
      }
      seats = await freeSeats(app);
    }
    const plan = planProvisioning({
      ...feed,
      applied: [...applied, ...adopted],
      mode: options.mode,
      options: { maxDisable: options.maxDisable, force: options.force, freeSeats: seats.free },
      file,
    });
    await recordFeed(app.db, {
      hash: feed.hash,
      path: resolve(options.file),
      format,
      mode: options.mode,
      dryRun: options.dryRun,
      rows: feed.rows.length,
      errors: feed.errors.length + plan.errors.length,
      actions: plan.actions.length,
      refused: plan.refused?.reason ?? null,
    });
    const result: ProvisionResult = { feed, plan, adopted: adopted.length, seats, ...(adoptionNote ? { adoptionNote } : {}) };
    planned = result;
    options.onPlan?.(result);
    if (options.dryRun || plan.refused !== undefined) return result;

    if (adopted.length > 0) await insertAdoptedIdentities(app.db, adopted);
    enqueued = await enqueuePlan(app, plan, feed.hash);
  } finally {
    // The lock covers planning and enqueuing only: the wait may be long.
    if (lock) {
      if (locked) await lock.query('select pg_advisory_unlock(hashtext($1))', [PROVISION_LOCK]).catch(() => undefined);
      lock.release();
    }
  }
  if (enqueued === undefined) return planned;
  const audit = await waitForActions(app, registry, [...enqueued.enqueued, ...enqueued.waitingOn], options.onProgress);
  return { ...planned, applied: { ...enqueued, audit } };
}
