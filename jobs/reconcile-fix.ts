import { z } from 'zod';
import { TrainsyncError } from '../src/lib/errors.ts';
import { RECONCILE_FIX_JOB, reconcileFix, reconcileFixSummarySchema, type ReconcileFixSummary } from '../src/provisioning/reconcile-fix.ts';
import { shrinkSettingOf } from '../src/provisioning/pipeline/shrink.ts';
import { defineJob } from '../src/queue/define-job.ts';
import { PROVISION_QUEUE } from '../src/queue/names.ts';

/**
 * `reconcile --fix` on the worker's schedule (TRAINSYNC_CRON_RECONCILE_FIX, off by
 * default): plans the last HR snapshot against the platform's accounts and enqueues
 * the repairs; the actions run as provisioning jobs and land in the audit trail. A plan
 * the guards refuse (a snapshot far shorter than the workforce, the disable limit, the
 * seats) fails the job (visible in `status`) and enqueues nothing. A run that finds
 * another reconcile --fix of the organisation running (the CLI's, the console's) yields:
 * it completes with `skipped` saying who holds it, and changes nothing.
 */
export const reconcileFixJob = defineJob({
  name: RECONCILE_FIX_JOB,
  queue: PROVISION_QUEUE,
  payload: z.object({ trigger: z.enum(['schedule', 'cli']).default('schedule') }),
  summary: reconcileFixSummarySchema,
  schedule: { setting: 'TRAINSYNC_CRON_RECONCILE_FIX', default: null },
  // No `exclusive`: reconcileFix takes the organisation's reconcile lock itself, the same
  // one as the CLI and the console, and a run that finds it taken completes saying who has it.
  attempts: 3,
  run: async (_payload, ctx): Promise<ReconcileFixSummary> => {
    const result = await reconcileFix(
      {
        scope: ctx.scope,
        queue: ctx.actions,
        log: ctx.log,
        platform: ctx.platform,
        locks: ctx.locks,
        drift: { freshnessMinutes: ctx.config.TRAINSYNC_PLATFORM_FRESHNESS_MINUTES, accessRemoved: ctx.config.TRAINSYNC_DRIFT_ACCESS_REMOVED },
        // The snapshot `load-feed` left meets the feed-shrink guard here as a feed meets it in `provision`.
        shrink: shrinkSettingOf(ctx.org, ctx.config.TRAINSYNC_ORGS_FILE !== undefined),
      },
      { dryRun: false, force: false, wait: false, starter: { by: 'schedule', jobId: ctx.job.id } },
    );
    if (result.busy) {
      // Yielded to the reconcile running: nothing planned or enqueued; the next tick runs as usual.
      return { employees: 0, actions: 0, repairs: 0, enqueued: 0, platformRequests: 0, skipped: result.busy.message };
    }
    const { plan } = result;
    if (plan.refused !== undefined) {
      const held = result.heldPlanId === undefined ? '' : ` Held as plan #${result.heldPlanId} (\`trainsync held\`).`;
      throw new TrainsyncError(`scheduled reconcile --fix refused, nothing was enqueued: ${plan.refused.message}${held}`, {
        code: `PLAN_REFUSED_${plan.refused.reason.toUpperCase().replace(/-/g, '_')}`,
        retryable: false,
      });
    }
    const summary: ReconcileFixSummary = {
      employees: result.employees,
      actions: plan.actions.length,
      repairs: plan.repairs,
      enqueued: result.applied?.enqueued.length ?? 0,
      platformRequests: result.platformRequests,
    };
    ctx.log.info(summary, 'scheduled reconcile --fix planned');
    return summary;
  },
});
