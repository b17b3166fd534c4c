import { ACTION_KINDS, type Plan } from '../provisioning/plan/types.ts';

/**
 * The whole plan, one line per action (what `--dry-run` promises): grouped by kind,
 * then the changes that need a person and the rows that cannot be planned.
 */
export function formatWholePlan(plan: Plan): string {
  const lines: string[] = [];
  for (const kind of ACTION_KINDS) {
    const actions = plan.actions.filter((a) => a.kind === kind);
    if (actions.length === 0) continue;
    lines.push(`${kind} (${actions.length}):`);
    for (const a of actions) lines.push(`  ${a.employeeId}  ${a.email}${a.groupId === undefined ? '' : `  → ${a.groupId}`}`);
  }
  if (plan.unsupported.length > 0) lines.push(`unsupported change (${plan.unsupported.length}):`, ...plan.unsupported.map((u) => `  ${u.message}`));
  if (plan.errors.length > 0) lines.push(`cannot plan (${plan.errors.length}):`, ...plan.errors.map((e) => `  ${e.message}`));
  if (plan.notes.length > 0) lines.push(`not created (${plan.notes.length}):`, ...plan.notes.map((n) => `  ${n.message}`));
  return lines.length === 0 ? 'Every action: none' : `Every action:\n${lines.join('\n')}`;
}
