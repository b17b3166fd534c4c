import { z } from 'zod';
import { defineJob } from '../src/queue/define-job.ts';
import { WEBHOOK_QUEUE } from '../src/queue/names.ts';
import { LOAD_WEBHOOK_RESULT_JOB } from '../src/webhooks/enqueue.ts';
import { guid } from '../src/platform/schemas.ts';
import { loadWebhookResult, WEBHOOK_RESULT_ATTEMPTS, webhookResultSummarySchema } from '../src/webhooks/load-result.ts';

/**
 * A result a platform webhook announced: `GET results/{id}`, upserted as the sync does,
 * and the waiting events settled. Queued by the receiver and by the sweep, one job per
 * result id at a time. The engine is src/webhooks/load-result.ts.
 */
export const loadWebhookResultJob = defineJob({
  name: LOAD_WEBHOOK_RESULT_JOB,
  enqueuedByName: true,
  resource: 'results',
  summary: webhookResultSummarySchema,
  queue: WEBHOOK_QUEUE,
  payload: z.object({ resultId: guid }),
  attempts: WEBHOOK_RESULT_ATTEMPTS,
  run: (payload, ctx) => loadWebhookResult(payload.resultId, ctx),
});
