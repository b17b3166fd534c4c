import type { Plan } from '../plan/types.ts';
import { runGuards, type Confirmation, type GuardVerdict } from './guards.ts';
import { countRecentDisables } from '../apply/actions-store.ts';
import { countIdentities } from '../apply/identities-store.ts';
import { openHeldEmployees } from './hold.ts';
import type { DesiredState, PipelineDeps, Source } from './types.ts';

/**
 * What the guards count, read from the warehouse under the lock (so two runs never both
 * spend one allowance): the organisation's active employees, the source's disables within
 * its window, and the people its open excess hold holds already. Only read when the plan
 * disables someone: a batch of creates costs no query.
 */
export async function guardPlan(
  deps: Pick<PipelineDeps, 'scope'>,
  source: Pick<Source<unknown>, 'kind' | 'label' | 'guard'>,
  plan: Plan,
  desired: Pick<DesiredState, 'appliedScope'>,
  options: { freeSeats: number | undefined; force: boolean; confirm?: Confirmation | undefined; approved?: ReadonlySet<string> | undefined },
): Promise<GuardVerdict> {
  const disables = plan.actions.filter((a) => a.kind === 'disable').map((a) => a.employeeId);
  const base = { plan, guard: source.guard, label: source.label, freeSeats: options.freeSeats, force: options.force, confirm: options.confirm, approved: options.approved };
  if (disables.length === 0) return runGuards({ ...base, activeCount: plan.activeCount, recent: 0, alreadyHeld: new Set() });
  // A plan of a few listed employees knows only their identities: the base of a percentage is the organisation's.
  const activeCount = desired.appliedScope === 'all' ? plan.activeCount : await countActive(deps);
  const recent = source.guard.window === undefined ? 0 : await countRecentDisables(deps.scope, source.kind, source.guard.window);
  const alreadyHeld = source.guard.holds === 'excess' ? await openHeldEmployees(deps.scope, source.kind, disables) : new Set<string>();
  return runGuards({ ...base, activeCount, recent, alreadyHeld });
}

async function countActive(deps: Pick<PipelineDeps, 'scope'>): Promise<number> {
  return (await countIdentities(deps.scope)).active;
}
