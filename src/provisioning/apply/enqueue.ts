import type { Logger } from '../../runtime/log.ts';
import type { ActionQueue, ChainSpec } from '../../queue/action-queue.ts';
import { PROVISION_QUEUE } from '../../queue/names.ts';
import { processAndWait } from '../../queue/process-and-wait.ts';
import type { OrgScope } from '../../warehouse/scope.ts';
import type { ProvisioningSource } from './tables.ts';
import type { Plan } from '../plan/types.ts';
import { jobForAction, jobIdForAction } from './actions.ts';
import { auditEntryFor, auditRows, finishAction, openActions, recordQueuedActions, type AuditEntry, type AuditRow } from './actions-store.ts';

/** What enqueuing and waiting need: the database (audit rows), the queue and a log. */
export interface ApplyDeps {
  /** The handle of the organisation whose employees these are: the stores read the organisation from it. */
  scope: OrgScope;
  queue: ActionQueue;
  log: Logger;
}

/**
 * Enqueuing a plan, in order per employee, without doubling anything.
 *
 * Order: each employee's actions form one BullMQ flow chain in plan order (create or
 * enable/disable first, then group changes): every action is the parent of the one
 * before it, so BullMQ starts it only when that one has finished. Children carry
 * `ignoreDependencyOnFailure`, so a failed create does not leave the rest of the chain
 * waiting forever: they run, find no platform user, and end as needs-identity.
 *
 * No doubles: job ids are the planner's action ids (`jobIdForAction`). BullMQ 6.7 treats an id that
 * already exists inside a flow as that existing job (a completed one counts as done, a
 * failed one would block its new parent forever, and one with another live parent makes
 * the whole add fail), so before adding, an employee with an action still queued from
 * an earlier run is left alone this run (the CLI waits for those jobs instead), and
 * finished jobs whose ids the plan reuses (failed, needs-identity) are removed first
 * so they run again. One whose action succeeded is never run again: the same id is the
 * same change from the same applied version, so another run made it after this plan
 * read the applied state and the platform (two repairs a moment apart); that employee is
 * left alone this run (`alreadyDone`), and the next plan starts from what it left.
 */

export interface EnqueueResult {
  /** Action ids enqueued by this call. */
  enqueued: string[];
  /** Action ids of earlier runs still queued or running; this run waits for them too. */
  waitingOn: string[];
  /** Employees left alone because an earlier run's action for them is still open. */
  skippedEmployees: string[];
  /**
   * Actions of this plan another run carried out after this one read the applied state
   * (the same id: the same change from the same version): done, so not done again, and
   * their employees are left alone this run (its view of them is out of date).
   */
  alreadyDone?: string[];
}

/**
 * Settles audit rows left `queued`/`planned` whose job is gone or ended without a record;
 * returns the live ones (of the given employees only, when given: SCIM plans a few at a time).
 */
export async function liveOpenActions(deps: Pick<ApplyDeps, 'scope' | 'queue'>, employeeIds?: readonly string[]): Promise<AuditRow[]> {
  const live: AuditRow[] = [];
  const open = await openActions(deps.scope, employeeIds);
  // Asked all at once: ioredis writes the commands back to back, one round trip rather than one per row
  // (a SCIM batch asks about every employee it plans, many times a second).
  const states = await Promise.all(open.map((row) => deps.queue.state(PROVISION_QUEUE, jobIdForAction(deps.scope, row.actionId))));
  for (const [i, row] of open.entries()) {
    const jobId = jobIdForAction(deps.scope, row.actionId);
    const state = states[i]!;
    if (state === 'unknown') {
      await finishAction(deps.scope, row.actionId, {
        status: 'skipped',
        errorCode: 'JOB_LOST',
        errorMessage: 'its job is no longer in the queue (never added, or removed); the next plan includes the action again if it is still needed',
      });
    } else if (state === 'completed' || state === 'failed') {
      const reason = await deps.queue.failedReason(PROVISION_QUEUE, jobId);
      await finishAction(deps.scope, row.actionId, {
        status: 'failed',
        errorCode: 'JOB_UNRECORDED',
        errorMessage: `the job ended (${state}${reason ? `: ${reason}` : ''}) without recording its outcome`,
      });
    } else {
      live.push(row);
    }
  }
  return live;
}

/** How the pipeline enqueues a source's plan (every field optional: a retry re-enqueues one action as it was). */
export interface EnqueueOptions {
  /** The source that planned it, and each action's reason, for the audit rows. */
  source?: ProvisioningSource | undefined;
  reasons?: ReadonlyMap<string, string> | undefined;
  /** `later`: a create does not look up its id; it is learned in bulk afterwards (a SCIM burst). */
  createLookUp?: 'now' | 'later' | undefined;
  /**
   * Only these employees' open actions are checked (SCIM plans a few employees at a
   * time); default every open action of the organisation, which the run then waits for.
   */
  openOf?: readonly string[] | undefined;
}

/** Writes the audit rows and adds one flow chain per employee; see the module comment. */
export async function enqueuePlan(deps: ApplyDeps, plan: Pick<Plan, 'actions' | 'byEmployee'>, feedHash: string | null, options: EnqueueOptions = {}): Promise<EnqueueResult> {
  const open = await liveOpenActions(deps, options.openOf);
  const busy = new Set(open.map((row) => row.employeeId));
  const waitingOn = open.map((row) => row.actionId);
  const skippedEmployees: string[] = [];
  const chains: ChainSpec[] = [];
  const entries: AuditEntry[] = [];
  const enqueued: string[] = [];

  // One round trip per chunk: ioredis pipelines the concurrent commands.
  const states = new Map<string, string>();
  const ids = plan.actions.map((a) => a.id);
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500);
    const found = await Promise.all(chunk.map((id) => deps.queue.state(PROVISION_QUEUE, jobIdForAction(deps.scope, id))));
    chunk.forEach((id, k) => states.set(id, found[k]!));
  }

  // A completed job whose action succeeded: another run (a reconcile beside this one, a
  // feed) applied this very change since this plan read the applied state and the platform.
  // Its id would be removed and added again below, and the change made twice.
  const completed = ids.filter((id) => states.get(id) === 'completed');
  const done = new Set(completed.length === 0 ? [] : (await auditRows(deps.scope, completed)).filter((r) => r.status === 'succeeded').map((r) => r.actionId));
  const alreadyDone: string[] = [];

  for (const [employeeId, actions] of plan.byEmployee.entries()) {
    const doneHere = actions.filter((a) => done.has(a.id));
    if (doneHere.length > 0) {
      alreadyDone.push(...doneHere.map((a) => a.id));
      skippedEmployees.push(employeeId);
      continue;
    }
    if (busy.has(employeeId)) {
      skippedEmployees.push(employeeId);
      continue;
    }
    let pending = false;
    for (const action of actions) {
      const state = states.get(action.id) ?? 'unknown';
      if (state === 'unknown') continue;
      if (state === 'completed' || state === 'failed') await deps.queue.remove(PROVISION_QUEUE, jobIdForAction(deps.scope, action.id));
      else {
        // Queued without an open audit row (e.g. enqueued by hand): wait for it, add nothing beside it.
        pending = true;
        waitingOn.push(action.id);
      }
    }
    if (pending) {
      skippedEmployees.push(employeeId);
      continue;
    }
    let node: ChainSpec | undefined;
    for (const action of actions) {
      const job = jobForAction(action, feedHash);
      // The id is learned in bulk after a burst (src/scim/resolve-ids.ts): one request per create, not two.
      const data = action.kind === 'create-user' && options.createLookUp === 'later' ? { ...job.data, lookUp: 'later' } : job.data;
      node = { org: deps.scope.org, name: job.name, data, jobId: jobIdForAction(deps.scope, action.id), ...(node ? { after: node } : {}) };
      entries.push(auditEntryFor(action, feedHash, { source: options.source, reason: options.reasons?.get(action.id) }));
      enqueued.push(action.id);
    }
    if (node) chains.push(node);
  }

  // Audit rows first: a job must find its row (it counts attempts there).
  await recordQueuedActions(deps.scope, entries);
  await deps.queue.addChains(chains);
  // A SCIM batch (a few employees, many times a minute) logs at debug; a run at info.
  const level = options.openOf === undefined ? 'info' : 'debug';
  deps.log[level]({ org: deps.scope.org, source: options.source, enqueued: enqueued.length, waitingOn: waitingOn.length, skippedEmployees: skippedEmployees.length, alreadyDone: alreadyDone.length }, 'provisioning actions enqueued');
  if (alreadyDone.length > 0) deps.log.info({ org: deps.scope.org, source: options.source, alreadyDone: alreadyDone.slice(0, 20) }, 'actions another run carried out since this plan was read: not done again; the next plan starts from what they left');
  return { enqueued, waitingOn, skippedEmployees, ...(alreadyDone.length > 0 ? { alreadyDone } : {}) };
}

export interface ApplyResult extends EnqueueResult {
  /** The audit rows of every action enqueued or waited for, after the wait. */
  audit: AuditRow[];
}

/**
 * Waits for provisioning actions (the worker rule of `sync`: when no worker is
 * connected, this process runs them) and returns their audit rows. `onProgress`
 * gets (finished, total) about once a second.
 */
export async function waitForActions(
  deps: ApplyDeps,
  actionIds: readonly string[],
  onProgress?: (finished: number, total: number, byKind: ReadonlyMap<string, { done: number; total: number }>) => void,
): Promise<AuditRow[]> {
  if (actionIds.length === 0) return [];
  const ticker = onProgress
    ? setInterval(() => {
        void auditRows(deps.scope, actionIds)
          .then((rows) => {
            const finished = (r: AuditRow): boolean => r.status !== 'queued' && r.status !== 'planned';
            // Per action kind too: the CLI shows one progress line per kind.
            const byKind = new Map<string, { done: number; total: number }>();
            for (const row of rows) {
              const kind = byKind.get(row.kind) ?? { done: 0, total: 0 };
              kind.total += 1;
              if (finished(row)) kind.done += 1;
              byKind.set(row.kind, kind);
            }
            onProgress(rows.filter(finished).length, actionIds.length, byKind);
          })
          .catch(() => undefined);
      }, 1_000)
    : undefined;
  try {
    // Outcomes are read from the audit rows: a trimmed job reads as "missing" to BullMQ.
    await processAndWait(deps.queue, PROVISION_QUEUE, actionIds.map((id) => jobIdForAction(deps.scope, id)));
  } finally {
    if (ticker) clearInterval(ticker);
  }
  return auditRows(deps.scope, actionIds);
}
