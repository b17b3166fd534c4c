import { describeMaxDisable, resolveMaxDisable } from '../plan/limits.ts';
import { disableRefusal, seatRefusal } from '../plan/refusal.ts';
import type { Plan, PlanRefusal } from '../plan/types.ts';
import { confirmationProblem, type ConfirmationAsk } from './confirm.ts';
import type { DisableGuard } from './types.ts';

/**
 * The guards of every plan, whatever its source: the disable guard (a count or a
 * percentage of the organisation's active employees, plus, for a source with a window, the
 * disables it made within it) and the seat guard. Pure: the pipeline reads the counts.
 *
 * `force` lifts the seat guard alone; past the disable limit it needs the typed count of
 * the plan's disables as well (`--force --confirm N`): a mass disable is never applied by a
 * flag a message could have suggested (pipeline/confirm.ts).
 */

/** A typed count and how to ask for it (pipeline/confirm.ts). */
export interface Confirmation {
  typed: string | number | undefined;
  ask: ConfirmationAsk;
}

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
  /** `--force`: the seat limit does not refuse; the disable limit does not either when `confirm` is the plan's disables. */
  force: boolean;
  /** `--confirm N` with `--force`: the count of disables the person accepts. */
  confirm?: Confirmation | undefined;
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
  const disables = [...plan.actions.ofKind('disable')].filter((a) => !input.approved?.has(a.employeeId));
  if (guard.holds === 'plan') {
    const over = disables.length + input.recent > limit;
    if (!input.force && over) {
      const repairs = disables.filter((a) => a.repair !== undefined).length;
      return { refused: disableRefusal(disables.length, repairs, guard.maxDisable, input.activeCount), held: plan.byEmployee.keys(), ...base };
    }
    // Forced past the limit, or a count given: applied only when the count is the plan's disables (never held: the person is at the command line).
    if (input.force && (over || input.confirm?.typed !== undefined)) {
      const ask = input.confirm?.ask ?? FORCE_ASK;
      const problem = confirmationProblem({ what: 'the plan', verb: 'apply', disables: disables.length }, input.confirm?.typed, ask);
      if (problem !== undefined) {
        const why = over ? `--force alone does not apply a plan past the disable limit of ${limit}: ` : '';
        return { refused: { reason: 'confirm', message: `${why}${problem}.` }, held: [], ...base };
      }
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

/** How the command line asks for the count. */
export const FORCE_ASK: ConfirmationAsk = { give: '--confirm N with --force', shownBy: 'the plan above (or --dry-run)' };

/** The typed count of an approval against the disables the approved plan applies now (those not held again). */
export function approvalProblem(approving: { planId: number; shown?: number | undefined }, plan: Plan, verdict: Pick<GuardVerdict, 'held'>, confirm: Confirmation): string | undefined {
  const held = new Set(verdict.held);
  const disables = [...plan.actions.ofKind('disable')].filter((a) => !held.has(a.employeeId)).length;
  return confirmationProblem({ what: `plan #${approving.planId}`, verb: 'approve', disables, shown: approving.shown }, confirm.typed, confirm.ask);
}

/** The limit as the setting gave it: `5 (TRAINSYNC_SCIM_MAX_DISABLE 5)`, or the default's wording. */
function describeLimit(guard: DisableGuard, activeCount: number): string {
  return describeMaxDisable(guard.maxDisable, activeCount).replace('--max-disable', guard.setting);
}
