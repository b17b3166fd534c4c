import { sql } from 'kysely';
import type { Plan } from '../plan/types.ts';
import { runGuards, type GuardVerdict } from './guards.ts';
import { openHeldEmployees } from './hold.ts';
import type { DesiredState, PipelineDeps, Source } from './types.ts';

/**
 * What the guards count, read from the warehouse under the lock (so two runs never both
 * spend one allowance): the organisation's active employees, the source's disables within
 * its window, and the people its open excess hold holds already. Only read when the plan
 * disables someone: a batch of creates costs no query.
 */
export async function guardPlan(
  deps: Pick<PipelineDeps, 'db' | 'org'>,
  source: Pick<Source<unknown>, 'kind' | 'label' | 'guard'>,
  plan: Plan,
  desired: Pick<DesiredState, 'appliedScope'>,
  options: { freeSeats: number | undefined; force: boolean; approved?: ReadonlySet<string> | undefined },
): Promise<GuardVerdict> {
  const disables = plan.actions.filter((a) => a.kind === 'disable').map((a) => a.employeeId);
  const base = { plan, guard: source.guard, label: source.label, freeSeats: options.freeSeats, force: options.force, approved: options.approved };
  if (disables.length === 0) return runGuards({ ...base, activeCount: plan.activeCount, recent: 0, alreadyHeld: new Set() });
  // A plan of a few listed employees knows only their identities: the base of a percentage is the organisation's.
  const activeCount = desired.appliedScope === 'all' ? plan.activeCount : await countActive(deps);
  const recent = source.guard.window === undefined ? 0 : await countRecentDisables(deps, source.kind, source.guard.window);
  const alreadyHeld = source.guard.holds === 'excess' ? await openHeldEmployees(deps.db, deps.org, source.kind, disables) : new Set<string>();
  return runGuards({ ...base, activeCount, recent, alreadyHeld });
}

async function countActive(deps: Pick<PipelineDeps, 'db' | 'org'>): Promise<number> {
  const { rows } = await sql<{ active: number }>`select count(*) filter (where active)::int as active from trainsync.identities where org = ${deps.org}`.execute(deps.db);
  return rows[0]?.active ?? 0;
}

async function countRecentDisables(deps: Pick<PipelineDeps, 'db' | 'org'>, kind: string, window: string): Promise<number> {
  const { rows } = await sql<{ recent: number }>`
    select count(*)::int as recent from trainsync.provisioning_actions
     where org = ${deps.org} and kind = 'disable' and source = ${kind} and created_at > now() - ${window}::interval`.execute(deps.db);
  return rows[0]?.recent ?? 0;
}
