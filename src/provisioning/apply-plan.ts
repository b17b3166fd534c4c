import { FlowProducer, type FlowJob, type JobsOptions } from 'bullmq';
import type { App } from '../app.ts';
import type { Config } from '../config.ts';
import { startWorkerIfNoneConnected } from '../queue/in-process-worker.ts';
import { defaultJobOptions } from '../queue/job-options.ts';
import { PROVISION_QUEUE } from '../queue/names.ts';
import type { JobRegistry } from '../queue/registry.ts';
import { waitForJobs } from '../queue/wait-for-jobs.ts';
import { jobForAction, jobIdForAction, PROVISION_ATTEMPTS } from './action-payloads.ts';
import { auditEntryFor, auditRows, finishAction, openActions, recordQueuedActions, type AuditEntry, type AuditRow } from './audit.ts';
import type { Plan } from './plan-types.ts';

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
 * so they run again.
 */

/** Chains added per FlowProducer call: one Redis round trip each. */
const FLOW_BATCH = 200;

export interface EnqueueResult {
  /** Action ids enqueued by this call. */
  enqueued: string[];
  /** Action ids of earlier runs still queued or running; this run waits for them too. */
  waitingOn: string[];
  /** Employees left alone because an earlier run's action for them is still open. */
  skippedEmployees: string[];
}

function jobOptions(config: Config): JobsOptions {
  return {
    ...defaultJobOptions(config, PROVISION_ATTEMPTS),
    // The HTTP client already retries transient errors; these attempts cover the rest
    // (a database hiccup, a crash). Never longer apart than TRAINSYNC_RETRY_MAX_DELAY_MS at the start.
    backoff: { type: 'exponential', delay: Math.min(5_000, config.TRAINSYNC_RETRY_MAX_DELAY_MS) },
    // Keep enough finished jobs that a large run's ids can still be looked up while it is waited for.
    removeOnComplete: { age: 7 * 24 * 3600, count: 20_000 },
    ignoreDependencyOnFailure: true,
  };
}

/** Settles audit rows left `queued`/`planned` whose job is gone or ended without a record; returns the live ones. */
async function liveOpenActions(app: App): Promise<AuditRow[]> {
  const queue = app.queues[PROVISION_QUEUE];
  const live: AuditRow[] = [];
  for (const row of await openActions(app.db)) {
    const state = await queue.getJobState(jobIdForAction(row.actionId));
    if (state === 'unknown') {
      await finishAction(app.db, row.actionId, {
        status: 'skipped',
        errorCode: 'JOB_LOST',
        errorMessage: 'its job is no longer in the queue (never added, or removed); the next plan includes the action again if it is still needed',
      });
    } else if (state === 'completed' || state === 'failed') {
      const job = await queue.getJob(jobIdForAction(row.actionId));
      await finishAction(app.db, row.actionId, {
        status: 'failed',
        errorCode: 'JOB_UNRECORDED',
        errorMessage: `the job ended (${state}${job?.failedReason ? `: ${job.failedReason}` : ''}) without recording its outcome`,
      });
    } else {
      live.push(row);
    }
  }
  return live;
}

/** Writes the audit rows and adds one flow chain per employee; see the module comment. */
export async function enqueuePlan(app: App, plan: Plan, feedHash: string | null): Promise<EnqueueResult> {
  const queue = app.queues[PROVISION_QUEUE];
  const open = await liveOpenActions(app);
  const busy = new Set(open.map((row) => row.employeeId));
  const waitingOn = open.map((row) => row.actionId);
  const skippedEmployees: string[] = [];
  const chains: FlowJob[] = [];
  const entries: AuditEntry[] = [];
  const enqueued: string[] = [];
  const options = jobOptions(app.config);

  // One round trip per chunk: ioredis pipelines the concurrent commands.
  const states = new Map<string, string>();
  const ids = plan.actions.map((a) => a.id);
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500);
    const found = await Promise.all(chunk.map((id) => queue.getJobState(jobIdForAction(id))));
    chunk.forEach((id, k) => states.set(id, found[k]!));
  }

  for (const [employeeId, actions] of Object.entries(plan.byEmployee)) {
    if (busy.has(employeeId)) {
      skippedEmployees.push(employeeId);
      continue;
    }
    let pending = false;
    for (const action of actions) {
      const state = states.get(action.id) ?? 'unknown';
      if (state === 'unknown') continue;
      if (state === 'completed' || state === 'failed') await queue.remove(jobIdForAction(action.id), { removeChildren: false });
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
    let node: FlowJob | undefined;
    for (const action of actions) {
      const job = jobForAction(action, feedHash);
      node = { name: job.name, queueName: PROVISION_QUEUE, data: job.data, opts: { ...options, jobId: jobIdForAction(action.id) }, ...(node ? { children: [node] } : {}) };
      entries.push(auditEntryFor(action, feedHash));
      enqueued.push(action.id);
    }
    if (node) chains.push(node);
  }

  // Audit rows first: a job must find its row (it counts attempts there).
  await recordQueuedActions(app.db, entries);
  if (chains.length > 0) {
    const flows = new FlowProducer({ connection: { url: app.config.REDIS_URL }, prefix: app.config.TRAINSYNC_QUEUE_PREFIX });
    try {
      for (let i = 0; i < chains.length; i += FLOW_BATCH) await flows.addBulk(chains.slice(i, i + FLOW_BATCH));
    } finally {
      await flows.close();
    }
  }
  app.log.info({ enqueued: enqueued.length, waitingOn: waitingOn.length, skippedEmployees: skippedEmployees.length }, 'provisioning actions enqueued');
  return { enqueued, waitingOn, skippedEmployees };
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
  app: App,
  registry: JobRegistry,
  actionIds: readonly string[],
  onProgress?: (finished: number, total: number) => void,
): Promise<AuditRow[]> {
  if (actionIds.length === 0) return [];
  const queue = app.queues[PROVISION_QUEUE];
  const worker = await startWorkerIfNoneConnected(app, PROVISION_QUEUE, registry);
  const ticker = onProgress
    ? setInterval(() => {
        void auditRows(app.db, actionIds)
          .then((rows) => onProgress(rows.filter((r) => r.status !== 'queued' && r.status !== 'planned').length, actionIds.length))
          .catch(() => undefined);
      }, 1_000)
    : undefined;
  try {
    const jobs = (await Promise.all(actionIds.map((id) => queue.getJob(jobIdForAction(id))))).filter((job) => job !== undefined);
    // Each waited job adds a 'closing' listener to the queue: expected, not a leak.
    queue.setMaxListeners(queue.getMaxListeners() + jobs.length);
    // Outcomes are read from the audit rows: a trimmed job reads as "missing" to BullMQ.
    await waitForJobs(app.config, PROVISION_QUEUE, jobs).finally(() => queue.setMaxListeners(queue.getMaxListeners() - jobs.length));
  } finally {
    if (ticker) clearInterval(ticker);
    await worker?.close();
  }
  return auditRows(app.db, actionIds);
}

/** Enqueues a plan and waits for every action of it (and any earlier one it waits on). */
export async function applyPlan(
  app: App,
  registry: JobRegistry,
  plan: Plan,
  feedHash: string | null,
  onProgress?: (finished: number, total: number) => void,
): Promise<ApplyResult> {
  const result = await enqueuePlan(app, plan, feedHash);
  const audit = await waitForActions(app, registry, [...result.enqueued, ...result.waitingOn], onProgress);
  return { ...result, audit };
}
