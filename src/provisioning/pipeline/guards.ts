import { describeMaxDisable, resolveMaxDisable } from '../plan/limits.ts';
import { disableRefusal, seatRefusal } from '../plan/refusal.ts';
import type { Plan, PlanRefusal } from '../plan/types.ts';
import type { DisableGuard } from './types.ts';

/**
 * The guards of every plan, whatever its source: the disable guard (a count or a
 * percentage of the organisation's active employees, plus, for a source with a window, the
 * disables it made within it) and the seat guard. Pure: the pipeline reads the counts.
 */

export interface GuardInput {
  plan: Plan;
  guard: DisableGuard;
  /** The source's name, for the hold's reason (`SCIM`). */
  label: string;
  /** The organisation's active employees: the base of a percentage. */
  activeCount: number;
  /** This source's disables within the guard's window (0 without one). */
  recent: number;
  /** Employees whose disable an open hold of this source already holds (an identity provider retrying): held again, spending nothing. */
  alreadyHeld: ReadonlySet<string>;
  /** Employees whose disable a person approved (a held plan approved): they pass. */
  approved?: ReadonlySet<string> | undefined;
  /** Free seats; undefined: not checked. */
  freeSeats: number | undefined;
  /** `--force`: no limit refuses or holds. */
  force: boolean;
}

export interface GuardVerdict {
  /** Nothing may be enqueued (the plan is held whole, or refused for seats). */
  refused?: PlanRefusal;
  /** Employees whose actions are held, not enqueued: every one of a plan held whole, else those past the limit. */
  held: string[];
  /** Why they are held (an excess hold; a whole plan's reason is `refused`). */
  reason?: string;
  /** The disable limit that applied, and the active employees it was taken from. */
  limit: number;
  activeCount: number;
}

export function runGuards(input: GuardInput): GuardVerdict {
  const { plan, guard } = input;
  const limit = resolveMaxDisable(guard.maxDisable, input.activeCount);
  const base = { limit, activeCount: input.activeCount };
  const disables = plan.actions.filter((a) => a.kind === 'disable' && !input.approved?.has(a.employeeId));
  if (guard.holds === 'plan') {
    if (!input.force && disables.length + input.recent > limit) {
      const repairs = disables.filter((a) => a.repair !== undefined).length;
      return { refused: disableRefusal(disables.length, repairs, guard.maxDisable, input.activeCount), held: Object.keys(plan.byEmployee), ...base };
    }
    const seats = input.force ? undefined : seatRefusal(plan.counts, input.freeSeats);
    return { ...(seats ? { refused: seats } : {}), held: [], ...base };
  }
  const already = disables.filter((d) => input.alreadyHeld.has(d.employeeId));
  const candidates = disables.filter((d) => !input.alreadyHeld.has(d.employeeId));
  const allowed = Math.max(0, limit - input.recent);
  const excess = input.force ? [] : candidates.slice(allowed);
  const held = [...new Set([...already, ...excess].map((d) => d.employeeId))];
  const within = guard.window ? ` within ${guard.window}` : '';
  const reason = excess.length === 0 ? undefined : `${input.recent + candidates.length} deactivations via ${input.label}${within}, over the limit of ${describeLimit(guard, input.activeCount)}`;
  const seats = input.force ? undefined : seatRefusal(plan.counts, input.freeSeats);
  return { ...(seats ? { refused: seats } : {}), held, ...(reason ? { reason } : {}), ...base };
}

/** The limit as the setting gave it: `5 (TRAINSYNC_SCIM_MAX_DISABLE 5)`, or the default's wording. */
function describeLimit(guard: DisableGuard, activeCount: number): string {
  return describeMaxDisable(guard.maxDisable, activeCount).replace('--max-disable', guard.setting);
}
