import type { JobQueue } from '../queue/job-queue.ts';
import type { OrgRef } from '../warehouse/scope.ts';

/** The job that loads one result a webhook named. */
export const LOAD_WEBHOOK_RESULT_JOB = 'load-webhook-result';

/**
 * One job per result id, deduplicated while it is queued, delayed for a retry or
 * running: a burst of events naming one result makes one fetch. Rows that arrive while
 * the job runs are picked up by the job itself (it reads again while any are left).
 */
export function webhookResultDedupeId(resultId: string): string {
  return `webhook-result:${resultId}`;
}

/** Queues the load of each result of the organisation of `scope` (a result already queued absorbs the add). */
export async function enqueueResultLoads(queue: Pick<JobQueue, 'add'>, scope: OrgRef, resultIds: readonly string[]): Promise<void> {
  await Promise.all(resultIds.map((resultId) => queue.add(LOAD_WEBHOOK_RESULT_JOB, { resultId }, { org: scope.org, dedupeId: webhookResultDedupeId(resultId) })));
}
