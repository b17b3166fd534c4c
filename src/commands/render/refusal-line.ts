import type { PlanRefusal } from '../../provisioning/plan/types.ts';
import type { ShrinkCheck } from '../../provisioning/pipeline/shrink.ts';

/**
 * The reason said last when a plan is refused (stderr, after everything else). On a
 * terminal the whole refusal is printed above it (the plan's REFUSED line), so this stays
 * short and its last line is what to do next: for a held plan, the command that approves
 * it, with N for the count (said in prose beside it). With --json the refusal's whole message goes here (stdout is the
 * JSON document). No line here is a whole command that applies a mass disable: the count is
 * for the person to type (pipeline/confirm.ts), and `--force` alone no longer applies one.
 */

/**
 * The command that approves a held plan. The count is left for the operator to type (the
 * sentence before it says how many lose access): a command ready to paste would make a
 * mass disable one paste away, where the confirmation is meant to be deliberate.
 */
export function approveCommand(planId: number): string {
  return `trainsync held --approve ${planId} --confirm N`;
}

export interface RefusalContext {
  disables: number;
  limit: number;
  heldPlanId?: number | undefined;
  dryRun: boolean;
  json: boolean;
}

export function refusedReason(refused: PlanRefusal, ctx: RefusalContext): string {
  const held = ctx.heldPlanId === undefined ? '' : ` Held as plan #${ctx.heldPlanId}: approve it with \`${approveCommand(ctx.heldPlanId)}\` (N: the ${ctx.disables} people who lose access), or in the console (Provisioning).`;
  if (ctx.json) return `refused, nothing was enqueued: ${refused.message}${held}`;
  if (refused.reason === 'max-disable') {
    const over = `${ctx.disables} disables, over the limit of ${ctx.limit}`;
    if (ctx.heldPlanId !== undefined) return `refused, nothing was enqueued: ${over}. Held for review; N = ${ctx.disables}.\n  approve plan #${ctx.heldPlanId}: ${approveCommand(ctx.heldPlanId)}`;
    return `refused${ctx.dryRun ? ' (dry run, nothing held)' : ', nothing was enqueued'}: ${over}.\n  review the plan above; to apply it anyway: --force with --confirm N (N = ${ctx.disables}, the people who lose access)`;
  }
  if (refused.reason === 'seats') return 'refused, nothing was enqueued: not enough free seats (see REFUSED above).\n  free seats on the platform, or rerun with --force';
  if (refused.reason === 'confirm') return `refused, nothing was enqueued: ${refused.message}`;
  if (refused.reason === 'empty-feed' || refused.reason === 'feed-shrink') return `refused, nothing was planned: ${refused.message}`;
  return 'refused, nothing was enqueued: the feed file cannot be read (the feed error above says why and how to fix it)';
}

/** The reason said last when the feed-shrink guard refused the feed (the whole sentence is printed above it). */
export function shrinkReason(check: ShrinkCheck, json: boolean): string {
  if (!check.decision.refused) return '';
  if (json) return `refused, nothing was planned: ${check.decision.message}`;
  return (
    `refused, nothing was planned: ${check.dataRows} data rows in a full feed; ${check.decision.needed} needed ` +
    `(${check.minSharePercent}% of ${check.activeEmployees} active employees).\n  if the feed is right: rerun with --allow-shrink`
  );
}
