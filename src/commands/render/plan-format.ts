import { fitTable } from './fit-table.ts';
import type { PlanActions } from '../../provisioning/plan/plan-actions.ts';
import { ACTION_KINDS, type Plan, type PlannedAction } from '../../provisioning/plan/types.ts';
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

/** The first examples of `total` items (`items` may hold only the first few). */
function examples(items: readonly { email: string; groupId?: string }[], names: GroupNames, total = items.length): string {
  const shown = items.slice(0, PLAN_EXAMPLES).map((a) => (a.groupId === undefined ? a.email : `${a.email} → ${groupLabel(a.groupId, names)}`));
  const more = total - shown.length;
  return more > 0 ? `${shown.join('\n')}\n… and ${more} more` : shown.join('\n');
}

/** At most PLAN_EXAMPLES lines of one kind of note, then how many more and where they are (`items` may hold only the first few of `total`). */
function noteLines<T>(items: readonly T[], label: string, line: (item: T) => string, everyAction: string, total = items.length): string[] {
  const lines = items.slice(0, PLAN_EXAMPLES).map((item) => `${label}: ${line(item)}`);
  if (total > PLAN_EXAMPLES) lines.push(`${label}: … and ${total - PLAN_EXAMPLES} more (${everyAction})`);
  return lines;
}

/** The first PLAN_EXAMPLES actions `pick` accepts (by position) and how many it accepts: a plan of 875,000 actions is not read whole for five lines. */
function firstOf(actions: PlanActions, pick: (i: number) => boolean): { first: PlannedAction[]; total: number } {
  const first: PlannedAction[] = [];
  let total = 0;
  for (let i = 0; i < actions.length; i += 1) {
    if (!pick(i)) continue;
    total += 1;
    if (first.length < PLAN_EXAMPLES) first.push(actions.at(i)!);
  }
  return { first, total };
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
    const { first, total } = firstOf(plan.actions, (i) => plan.actions.kindAt(i) === kind);
    rows.push([kind, plan.counts[kind], examples(first, names, total)]);
  }
  rows.push(['unchanged', plan.unchanged, '']);
  rows.push(['unsupported change', plan.unsupported.length, examples(plan.unsupported, names)]);
  rows.push(['cannot plan (row error)', plan.errors.length, examples(plan.errors, names)]);
  rows.push(['not created (inactive)', plan.notes.length, examples(plan.notes, names)]);
  // Drawn to `width` (the terminal's, at most 100): the examples give way first and are cut
  // (…), not wrapped: an example is a hint, every action is in --output and --json.
  const table = fitTable(['action', 'count', 'examples'], rows, { width: options.width ?? Infinity, flex: [2], cut: [2] });
  const lines = [`Plan (${plan.mode} mode; ${plan.activeCount} active employees applied; disable limit ${plan.maxDisable})`, plan.platform, table];
  const repairs = firstOf(plan.actions, (i) => plan.actions.hasRepairAt(i));
  if (repairs.total > 0) lines.push(`drift repaired by this plan: ${repairs.total} actions (counted above and in the guards)`);
  lines.push(
    ...noteLines(repairs.first, 'repair', (a) => `${a.kind} ${a.employeeId} (${a.email})${a.groupId === undefined ? '' : ` → ${groupLabel(a.groupId, names)}`}: ${a.repair}`, every, repairs.total),
    ...noteLines(plan.drift, 'drift (not repaired)', (d) => d.message, every),
    ...noteLines(plan.unsupported, 'unsupported', (u) => u.message, every),
    ...noteLines(plan.errors, 'error', (e) => e.message, every),
  );
  if (plan.refused !== undefined) lines.push(`REFUSED (${plan.refused.reason}): ${plan.refused.message}`);
  return lines.join('\n');
}

/** The plan as JSON (its actions as an array, byEmployee as an object); this round-trips through JSON.parse. */
export function planToJson(plan: Plan): string {
  return JSON.stringify(plan, null, 2);
}
