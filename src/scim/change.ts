import { sql, type Kysely } from 'kysely';
import type { Config } from '../config.ts';
import type { Logger } from '../runtime/log.ts';
import { jobForAction, jobIdForAction } from '../provisioning/apply/actions.ts';
import { toAppliedEmployee } from '../provisioning/apply/applied-state.ts';
import { auditEntryFor, recordQueuedActions, type AuditEntry } from '../provisioning/apply/audit.ts';
import { liveOpenActions } from '../provisioning/apply/enqueue.ts';
import type { FeedRow } from '../provisioning/feed/types.ts';
import { planDelta } from '../provisioning/plan/plan.ts';
import { loadLeaverSince, readPlatformView, type PlatformViewResult } from '../provisioning/platform-view.ts';
import { PROVISION_LOCK, touchedAccounts } from '../provisioning/provision-feed.ts';
import type { PlatformClient } from '../platform/types.ts';
import type { ChainSpec, JobQueue } from '../queue/job-queue.ts';
import { PROVISION_QUEUE } from '../queue/names.ts';
import { withAdvisoryLock } from '../warehouse/advisory-lock.ts';
import type { Database } from '../warehouse/database.ts';
import { snapshotEmployees } from '../warehouse/load-employees.ts';
import type { PgLender } from '../warehouse/transaction.ts';
import { holdExcessDisables, supersedeHeld } from './guard.ts';
import { SCIM_AUDIT_MARK } from './marks.ts';
import { markPlanned } from './store.ts';

/**
 * One path for every SCIM change: it is a one-row delta HR feed. The row is snapshotted
 * into training.employees (and its history) as a feed's rows are; then, under the lock
 * provisioning runs take, it is planned by the feed's planner against the applied state
 * and the platform's current view of the accounts it touches (training.users when fresh,
 * else GET users, by id when they are few, within the budget), the guard holds a burst of disables, and the actions are written to the audit trail
 * (feed_hash "via SCIM") and queued as the same jobs, in the same per-employee chains.
 * The only platform calls here are those reads: the writes are the jobs', within the budget.
 *
 * An employee whose earlier actions are still queued is left pending (the planner
 * would plan from a state about to change); the SCIM sweep plans it once they finish.
 */

export interface ScimChange {
  scimId: string;
  /** The scim_users version this change states: a row changed since is not marked planned. */
  version: number;
  row: FeedRow;
}

export interface ChangeDeps {
  /** The organisation whose SCIM endpoint took the change. */
  org: string;
  db: Kysely<Database>;
  withPgClient: PgLender;
  queue: JobQueue;
  log: Logger;
  config: Pick<Config, 'TRAINSYNC_SCIM_MAX_DISABLE' | 'TRAINSYNC_PLATFORM_FRESHNESS_MINUTES' | 'TRAINSYNC_DRIFT_ACCESS_REMOVED'>;
  /** Built on first use: a batch of creates alone never reads the platform. */
  platform: () => PlatformClient;
}

export interface ChangeOptions {
  /** Employees whose held disable a person released: the guard lets it through. */
  released?: ReadonlySet<string>;
}

export interface ChangeOutcome {
  enqueued: string[];
  /** Employees left pending (earlier actions still queued). */
  pending: string[];
  /** Employees whose disable the guard held. */
  held: string[];
  /** Creates queued without their id lookup: a resolve pass is due once they have run. */
  deferredCreates: number;
}

/** Snapshots, plans and enqueues a batch of changes (one per employee). */
export async function applyScimChanges(deps: ChangeDeps, changes: readonly ScimChange[], options: ChangeOptions = {}): Promise<ChangeOutcome> {
  if (changes.length === 0) return { enqueued: [], pending: [], held: [], deferredCreates: 0 };
  await snapshotEmployees(deps.withPgClient, { rows: changes.map((c) => c.row), mode: 'delta' });
  return withAdvisoryLock(deps.withPgClient, PROVISION_LOCK, () => planAndEnqueue(deps, changes, options));
}

async function planAndEnqueue(deps: ChangeDeps, changes: readonly ScimChange[], options: ChangeOptions): Promise<ChangeOutcome> {
  const { db, queue, log } = deps;
  const ids = changes.map((c) => c.row.employeeId);
  const emails = changes.map((c) => c.row.email);
  const identities = await db
    .selectFrom('trainsync.identities')
    .selectAll()
    .where((eb) => eb.or([eb('employee_id', 'in', ids), eb(sql<string>`lower(email)`, 'in', emails)]))
    .execute();
  const pending = new Set((await liveOpenActions(deps, ids)).map((row) => row.employeeId));
  const ready = changes.filter((c) => !pending.has(c.row.employeeId));
  await supersedeHeld(db, ready.filter((c) => c.row.status === 'active').map((c) => c.row.employeeId));

  const applied = identities.map(toAppliedEmployee);
  const rows = ready.map((c) => c.row);
  const platform = await readTouchedAccounts(deps, touchedAccounts(rows, applied));
  const plan = planDelta({
    rows,
    applied,
    // The guard below is the SCIM limit (over an hour, not per request); seats are the jobs' to meet.
    options: { force: true, accessRemoved: deps.config.TRAINSYNC_DRIFT_ACCESS_REMOVED },
    file: 'SCIM',
    platform: platform.view,
    platformNote: platform.note,
    ...(platform.view ? { leaverSince: await loadLeaverSince(db) } : {}),
  });
  for (const u of plan.unsupported) log.info({ employeeId: u.employeeId, field: u.field }, `SCIM change not applied to the platform: ${u.message}`);
  for (const e of plan.errors) log.warn({ employeeId: e.employeeId, field: e.field }, `SCIM change not planned: ${e.message}`);

  const scimIdOf = new Map(changes.map((c) => [c.row.employeeId, c.scimId]));
  const disables = plan.actions.filter((a) => a.kind === 'disable' && !options.released?.has(a.employeeId));
  const held = await holdExcessDisables(deps, disables, scimIdOf);
  for (const employeeId of held) log.warn({ employeeId }, 'SCIM deactivation held by the guard: `trainsync scim held` releases or drops it');

  const states = await Promise.all(plan.actions.map((a) => queue.state(PROVISION_QUEUE, jobIdForAction(a.id))));
  const stateOf = new Map(plan.actions.map((a, i) => [a.id, states[i]!]));
  const chains: ChainSpec[] = [];
  const entries: AuditEntry[] = [];
  const enqueued: string[] = [];
  let deferredCreates = 0;
  for (const [employeeId, actions] of Object.entries(plan.byEmployee)) {
    if (held.has(employeeId)) continue;
    // A job of the same id still queued (an earlier request's): wait for it, add nothing beside it.
    if (actions.some((a) => !['unknown', 'completed', 'failed'].includes(stateOf.get(a.id)!))) {
      pending.add(employeeId);
      continue;
    }
    let node: ChainSpec | undefined;
    for (const action of actions) {
      if (stateOf.get(action.id) !== 'unknown') await queue.remove(PROVISION_QUEUE, jobIdForAction(action.id));
      const job = jobForAction(action, SCIM_AUDIT_MARK);
      // The id is learned in bulk after the burst (resolve-ids.ts): one request per create, not two.
      const data = action.kind === 'create-user' ? { ...job.data, lookUp: 'later' } : job.data;
      if (action.kind === 'create-user') deferredCreates += 1;
      node = { org: deps.org, name: job.name, data, jobId: jobIdForAction(action.id), ...(node ? { after: node } : {}) };
      entries.push(auditEntryFor(action, SCIM_AUDIT_MARK));
      enqueued.push(action.id);
    }
    if (node) chains.push(node);
  }
  // Audit rows first: a job must find its row.
  await recordQueuedActions(db, entries);
  await queue.addChains(chains);
  const planned = changes.filter((c) => !pending.has(c.row.employeeId));
  await markPlanned(db, planned.map((c) => ({ scimId: c.scimId, version: c.version })));
  if (enqueued.length > 0 || pending.size > 0) log.debug({ changes: changes.length, enqueued: enqueued.length, pending: pending.size, held: held.size }, 'SCIM changes planned');
  return { enqueued, pending: [...pending], held: [...held], deferredCreates };
}

/**
 * The platform's view of the accounts a batch touches, so a leaver re-enabled by hand or an
 * account deleted by hand is repaired as a feed would repair it. New Users touch no account:
 * a batch of creates reads nothing.
 */
async function readTouchedAccounts(deps: ChangeDeps, touchedIds: readonly string[]): Promise<PlatformViewResult> {
  if (touchedIds.length === 0) return { view: undefined, note: 'no existing account touched', requests: 0 };
  return readPlatformView(
    { db: deps.db, platform: deps.platform() },
    { freshnessMinutes: deps.config.TRAINSYNC_PLATFORM_FRESHNESS_MINUTES, touchedIds },
  );
}
