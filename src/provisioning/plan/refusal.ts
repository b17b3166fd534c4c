import { describeMaxDisable } from './limits.ts';
import type { ActionKind, MaxDisable, PlanRefusal } from './types.ts';

/**
 * The refusals of the guards, worded for the person who ran the plan: what was refused,
 * how to review it and how to override it. Pure; used by the planner (planProvisioning
 * without `force`) and by the pipeline's guards, so both say the same. A mass disable is
 * overridden only by a person typing its count, so the disable refusal names no flag or
 * limit that would apply it as it stands (pipeline/confirm.ts).
 */

export function disableRefusal(disables: number, repairs: number, maxDisable: MaxDisable | undefined, activeCount: number): PlanRefusal {
  const ofWhich = repairs > 0 ? ` (${repairs} of them repair drift: leavers whose access is back on the platform)` : '';
  return {
    reason: 'max-disable',
    message:
      `The plan would disable ${disables} employees${ofWhich}, more than the limit of ${describeMaxDisable(maxDisable, activeCount)}; nothing was enqueued. ` +
      'Review it first with --dry-run (a feed cut short, a wrong --map, or --mode full on a delta feed all look like mass leavers). ' +
      'If it is right, approve it with the number of people who lose access typed (trainsync held, or the console), or rerun with --force and that number given to --confirm.',
  };
}

export function seatRefusal(counts: Readonly<Record<ActionKind, number>>, freeSeats: number | undefined): PlanRefusal | undefined {
  if (freeSeats === undefined) return undefined;
  const needed = counts['create-user'] + counts.enable;
  if (needed <= freeSeats) return undefined;
  return {
    reason: 'seats',
    message:
      `The plan needs ${needed} seats (${counts['create-user']} new accounts, ${counts.enable} re-enabled) but only ${freeSeats} are free; nothing was enqueued. ` +
      'Free seats or buy more on the platform, then rerun; or rerun with --force to enqueue anyway (creates beyond the limit fail with USER_LIMIT_REACHED).',
  };
}
