import { z } from 'zod';
import type { JobContext } from '../queue/job-context.ts';
import { classify, errorMessage, TrainsyncError } from '../lib/errors.ts';
import { InvalidRecordError, PlatformError } from '../platform/errors.ts';
import type { Result } from '../platform/schemas.ts';
import { type QuarantinedRecord, quarantineRecords, results } from '../sync/index.ts';
import type { LoadCounts } from '../warehouse/load-counts.ts';
import { upsertStaged } from '../warehouse/load-staged.ts';
import type { WebhookResultOutcome } from './tables.ts';
import { databaseNow, hasPendingResult, settleEventsOf, settleResult, type SettledEvent } from './store.ts';

/**
 * Attempts of a result's load. A result the API cannot return yet (RESULT_NOT_FOUND,
 * 404) is retried with BullMQ's exponential backoff (5 s, 10 s, 20 s … about 10
 * minutes in all), then left to the nightly sync with the outcome `not-found`.
 */
export const WEBHOOK_RESULT_ATTEMPTS = 8;

/** Reads of one result within one job, while events keep arriving for it during the fetch. */
const MAX_ROUNDS = 3;

/** The API has no such result yet: worth another attempt later. */
export class ResultNotReadableYet extends TrainsyncError {
  constructor(resultId: string, cause: unknown) {
    super(`result ${resultId} is not readable yet (${errorMessage(cause)}); tried again with backoff`, { code: 'RESULT_NOT_READABLE_YET', retryable: true, cause });
    this.name = 'ResultNotReadableYet';
  }
}

/** A job's summary: row counts (for `trainsync_rows_loaded_total`) and the events it settled (for the webhook metrics). */
export const webhookResultSummarySchema = z.object({
  resource: z.literal('results'),
  resultId: z.string(),
  fetches: z.number(),
  /**
   * `skipped`: no event waited for the result any more (another job had read it).
   * `quarantined`: the record failed validation; it is in trainsync.quarantine and its
   * events are settled as failed, naming the reason.
   */
  outcome: z.enum(['loaded', 'not-found', 'failed', 'skipped', 'quarantined']),
  inserted: z.number(),
  updated: z.number(),
  unchanged: z.number(),
  /** Records put in trainsync.quarantine (0 or 1). */
  quarantined: z.number(),
  webhookEvents: z.array(z.object({ type: z.string(), outcome: z.string(), seconds: z.number() })),
});
export type WebhookResultSummary = z.output<typeof webhookResultSummarySchema>;

function isNotReadable(error: unknown): boolean {
  return error instanceof PlatformError && (error.code === 'RESULT_NOT_FOUND' || error.status === 404);
}

type Deps = Pick<JobContext, 'scope' | 'platform' | 'log' | 'job'>;

/**
 * Settles the result's rows received up to `cutoff` and the events that are complete
 * with them; in the same transaction, stores the result read or quarantines the record.
 */
async function settle(
  deps: Deps,
  resultId: string,
  cutoff: Date,
  outcome: WebhookResultOutcome,
  error: string | null,
  found?: { result: Result } | { invalid: QuarantinedRecord },
): Promise<{ events: SettledEvent[]; counts?: LoadCounts }> {
  return deps.scope.retriedTransaction(async (tx) => {
    const counts = found && 'result' in found ? await upsertStaged(tx, results.table, [found.result], { seenAt: new Date() }) : undefined;
    if (found && 'invalid' in found) await quarantineRecords(tx, null, [found.invalid]);
    const eventIds = await settleResult(tx, resultId, cutoff, outcome);
    return { events: await settleEventsOf(tx, error, eventIds), ...(counts ? { counts } : {}) };
  });
}

/**
 * Reads one result the platform announced and upserts it exactly as the sync does
 * (answers included), then settles every waiting event row of that result received
 * before the read began. Reads again while rows received during a read are left.
 */
export async function loadWebhookResult(resultId: string, deps: Deps, attempts = WEBHOOK_RESULT_ATTEMPTS): Promise<WebhookResultSummary> {
  const lastAttempt = deps.job.attemptsMade + 1 >= attempts;
  const summary: WebhookResultSummary = { resource: 'results', resultId, fetches: 0, outcome: 'skipped', inserted: 0, updated: 0, unchanged: 0, quarantined: 0, webhookEvents: [] };
  const record = (events: SettledEvent[]): void => {
    for (const e of events) summary.webhookEvents.push({ type: e.eventType, outcome: e.outcome, seconds: e.seconds });
  };

  for (let round = 0; round < MAX_ROUNDS; round += 1) {
    if (!(await hasPendingResult(deps.scope, resultId))) break;
    // Rows received before this instant get this read's answer; later ones need another read.
    const cutoff = await databaseNow(deps.scope.db);
    let result: Result;
    try {
      summary.fetches += 1;
      result = await deps.platform.getResult(resultId);
    } catch (error) {
      const facts = classify(error);
      if (isNotReadable(error) && !lastAttempt) throw new ResultNotReadableYet(resultId, error);
      if (facts.quarantine && error instanceof InvalidRecordError) {
        // As the sync does with a bad record on a list page: kept raw with its reason, never read again for this event.
        const reason = `failed validation; quarantined in trainsync.quarantine: ${error.problem}`;
        const invalid: QuarantinedRecord = { resource: 'results', raw: error.raw, message: error.problem, page: null };
        record((await settle(deps, resultId, cutoff, 'failed', reason, { invalid })).events);
        deps.log.warn({ resultId, reason: error.problem }, 'webhook result failed validation; quarantined');
        summary.outcome = 'quarantined';
        summary.quarantined += 1;
        return summary;
      }
      const outcome: WebhookResultOutcome = isNotReadable(error) ? 'not-found' : 'failed';
      if (outcome === 'not-found' || !facts.retryable || lastAttempt) {
        const reason = `${outcome === 'not-found' ? 'not readable after every retry; left to the nightly sync' : 'failed; left to the nightly sync'}: ${facts.message}`;
        const settled = await settle(deps, resultId, cutoff, outcome, reason).catch((settleError: unknown) => {
          // The sweep queues it again once the database answers.
          deps.log.warn({ err: settleError, resultId }, 'could not record the outcome of a webhook result');
          return { events: [] };
        });
        record(settled.events);
        deps.log.warn({ resultId, outcome, reason: facts.message }, 'webhook result left to the nightly sync');
        if (outcome === 'not-found') {
          summary.outcome = 'not-found';
          return summary;
        }
      }
      throw error;
    }
    if (result.id !== resultId) deps.log.warn({ resultId, returnedId: result.id }, 'GET results/{id} returned another id; stored as returned');
    const settled = await settle(deps, resultId, cutoff, 'loaded', null, { result });
    record(settled.events);
    summary.outcome = 'loaded';
    summary.inserted += settled.counts?.inserted ?? 0;
    summary.updated += settled.counts?.updated ?? 0;
    summary.unchanged += settled.counts?.unchanged ?? 0;
  }
  return summary;
}
