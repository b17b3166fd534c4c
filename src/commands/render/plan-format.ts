import { fitTable } from './fit-table.ts';
import { ACTION_KINDS, type Plan } from '../../provisioning/plan/types.ts';
import { groupLabel, NO_GROUP_NAMES, type GroupNames } from '../../provisioning/group-names.ts';

/** Examples per action kind, and lines per kind of note (repairs, drift, unsupported, errors): a plan reads in one screen. */
export const PLAN_EXAMPLES = 5;

export interface PlanTableOptions {
  width?: number;
  /** Group GUID → name (training.groups): a person reads names; --json keeps the GUIDs. */
  groupNames?: GroupNames;
  /** Where every action is, said after a list cut short; default the dry run's --output. */
  everyAction?: string;
}

const DEFAULT_EVERY_ACTION = 'every one: --dry-run --output FILE';

function examples(items: readonly { email: string; groupId?: string }[], names: GroupNames): string {
  const shown = items.slice(0, PLAN_EXAMPLES).map((a) => (a.groupId === undefined ? a.email : `${a.email} → ${groupLabel(a.groupId, names)}`));
  const more = items.length - shown.length;
  return more > 0 ? `${shown.join('\n')}\n… and ${more} more` : shown.join('\n');
}

/** At most PLAN_EXAMPLES lines of one kind of note, then how many more and where they are. */
function noteLines<T>(items: readonly T[], label: string, line: (item: T) => string, everyAction: string): string[] {
  const lines = items.slice(0, PLAN_EXAMPLES).map((item) => `${label}: ${line(item)}`);
  if (items.length > PLAN_EXAMPLES) lines.push(`${label}: … and ${items.length - PLAN_EXAMPLES} more (${everyAction})`);
  return lines;
}

/**
 * The plan as a text table: the count of each action kind with a few examples (group names,
 * not GUIDs), then the lines that need a person: repairs, drift, unsupported changes, rows
 * that cannot be planned, and a refusal. No colour codes, so it reads the same in a log file.
 */
export function formatPlanTable(plan: Plan, options: PlanTableOptions = {}): string {
  const names = options.groupNames ?? NO_GROUP_NAMES;
  const every = options.everyAction ?? DEFAULT_EVERY_ACTION;
  const rows: unknown[][] = [];
  for (const kind of ACTION_KINDS) {
    const items = plan.actions.filter((a) => a.kind === kind);
    rows.push([kind, plan.counts[kind], examples(items, names)]);
  }
  rows.push(['unchanged', plan.unchanged, '']);
  rows.push(['unsupported change', plan.unsupported.length, examples(plan.unsupported, names)]);
  rows.push(['cannot plan (row error)', plan.errors.length, examples(plan.errors, names)]);
  rows.push(['not created (inactive)', plan.notes.length, examples(plan.notes, names)]);
  // Drawn to `width` (the terminal's, at most 100): the examples give way first and are cut
  // (…), not wrapped: an example is a hint, every action is in --output and --json.
  const table = fitTable(['action', 'count', 'examples'], rows, { width: options.width ?? Infinity, flex: [2], cut: [2] });
  const lines = [`Plan (${plan.mode} mode; ${plan.activeCount} active employees applied; disable limit ${plan.maxDisable})`, plan.platform, table];
  const repairs = plan.actions.filter((a) => a.repair !== undefined);
  if (repairs.length > 0) lines.push(`drift repaired by this plan: ${repairs.length} actions (counted above and in the guards)`);
  lines.push(
    ...noteLines(repairs, 'repair', (a) => `${a.kind} ${a.employeeId} (${a.email})${a.groupId === undefined ? '' : ` → ${groupLabel(a.groupId, names)}`}: ${a.repair}`, every),
    ...noteLines(plan.drift, 'drift (not repaired)', (d) => d.message, every),
    ...noteLines(plan.unsupported, 'unsupported', (u) => u.message, every),
    ...noteLines(plan.errors, 'error', (e) => e.message, every),
  );
  if (plan.refused !== undefined) lines.push(`REFUSED (${plan.refused.reason}): ${plan.refused.message}`);
  return lines.join('\n');
}

/** The plan as JSON; the plan is plain data, so this round-trips through JSON.parse. */
export function planToJson(plan: Plan): string {
  return JSON.stringify(plan, null, 2);
}
