import Table from 'cli-table3';
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

function examples(items: readonly { email: string; groupId?: string }[], names: GroupNames, width = Infinity): string {
  // Cut, not wrapped: an example is a hint, every action is in --output and --json.
  const cut = (text: string): string => (text.length <= width ? text : `${text.slice(0, Math.max(0, width - 1))}…`);
  const shown = items.slice(0, PLAN_EXAMPLES).map((a) => cut(a.groupId === undefined ? a.email : `${a.email} → ${groupLabel(a.groupId, names)}`));
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
  // The examples column takes what the first two (25 and 7 wide) leave of `width`, less
  // 4 borders and its own padding of 2, and one column to spare.
  const exampleWidth = options.width === undefined ? Infinity : Math.max(20, options.width - 25 - 7 - 4 - 2 - 1);
  const table = new Table({ head: ['action', 'count', 'examples'], style: { head: [], border: [], compact: true }, wordWrap: false });
  for (const kind of ACTION_KINDS) {
    const items = plan.actions.filter((a) => a.kind === kind);
    table.push([kind, plan.counts[kind], examples(items, names, exampleWidth)]);
  }
  table.push(['unchanged', plan.unchanged, '']);
  table.push(['unsupported change', plan.unsupported.length, examples(plan.unsupported, names, exampleWidth)]);
  table.push(['cannot plan (row error)', plan.errors.length, examples(plan.errors, names, exampleWidth)]);
  table.push(['not created (inactive)', plan.notes.length, examples(plan.notes, names, exampleWidth)]);
  const lines = [`Plan (${plan.mode} mode; ${plan.activeCount} active employees applied; disable limit ${plan.maxDisable})`, plan.platform, table.toString()];
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
