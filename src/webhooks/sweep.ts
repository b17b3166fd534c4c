import type { Logger } from '../runtime/log.ts';
import type { JobQueue } from '../queue/job-queue.ts';
import type { OrgScopes } from '../warehouse/scope.ts';
import { enqueueResultLoads } from './enqueue.ts';
import { pruneRefusals } from './refusals.ts';
import { pendingResults, pruneEvents, settleEvents } from './store.ts';

/** Results queued per sweep at most (a larger backlog takes several sweeps; the oldest go first). */
const SWEEP_LIMIT = 5_000;
/** A periodic sweep leaves rows younger than this to the receiver's own enqueue. */
const PERIODIC_MIN_AGE_MS = 10_000;

export interface SweepDeps {
  scopes: Pick<OrgScopes, 'scope' | 'acrossOrganisations'>;
  queue: Pick<JobQueue, 'add'>;
  log: Logger;
}

export interface SweepCounts {
  queued: number;
  settled: number;
  pruned: number;
}

/**
 * Processing is driven from the table, not from Redis: this queues every result some
 * stored event still waits for (an event stored just before a crash, or while Redis
 * was down), settles events whose results are all done, and prunes old ones. Queueing
 * a result that already has a job is absorbed by its deduplication. One sweep serves
 * every organisation: each result is queued under the organisation of its event, so
 * its job reads it with that organisation's key.
 */
export async function sweepWebhookEvents(deps: SweepDeps, options: { minAgeMs: number; retentionDays: number }): Promise<SweepCounts> {
  return deps.scopes.acrossOrganisations('the webhook sweep serves every organisation\'s stored events', async ({ db }) => {
  const settled = await settleEvents(db, 'settled by the sweep');
  const pending = await pendingResults(db, options.minAgeMs, SWEEP_LIMIT);
  const byOrg = new Map<string, string[]>();
  for (const { org, resultId } of pending) byOrg.set(org, [...(byOrg.get(org) ?? []), resultId]);
  for (const [org, resultIds] of byOrg) {
    for (let i = 0; i < resultIds.length; i += 100) await enqueueResultLoads(deps.queue, deps.scopes.scope(org), resultIds.slice(i, i + 100));
  }
  const pruned = (await pruneEvents(db, options.retentionDays)) + (await pruneRefusals(db, options.retentionDays));
  return { queued: pending.length, settled: settled.length, pruned };
  });
}

/** Sweeps now (everything pending) and then every `intervalMs`; failures are logged and retried at the next tick. */
export function startSweeper(deps: SweepDeps, options: { intervalMs: number; retentionDays: number }): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  let first = true;
  const tick = (): void => {
    // One sweep at a time: a slow one (an outage) is not stacked.
    if (running) return;
    const minAgeMs = first ? 0 : Math.min(PERIODIC_MIN_AGE_MS, options.intervalMs);
    first = false;
    running = sweepWebhookEvents(deps, { minAgeMs, retentionDays: options.retentionDays })
      .then(
        (counts) => {
          if (counts.queued + counts.settled + counts.pruned > 0) deps.log.info(counts, 'webhook sweep: stored events queued again, settled or pruned');
        },
        (error: unknown) => deps.log.warn({ err: error }, 'webhook sweep failed; trying again at the next one'),
      )
      .finally(() => {
        running = undefined;
      });
  };
  tick();
  const timer = setInterval(tick, options.intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
