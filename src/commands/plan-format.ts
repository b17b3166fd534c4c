import Table from 'cli-table3';
import { ACTION_KINDS, type Plan } from '../provisioning/plan/types.ts';

const EXAMPLES = 3;

function examples(items: readonly { email: string; groupId?: string }[], width = Infinity): string {
  // Cut, not wrapped: an example is a hint, the whole plan is in --dry-run and --json.
  const cut = (text: string): string => (text.length <= width ? text : `${text.slice(0, Math.max(0, width - 1))}…`);
  const shown = items.slice(0, EXAMPLES).map((a) => cut(a.groupId === undefined ? a.email : `${a.email} → ${a.groupId}`));
  const more = items.length - shown.length;
  return more > 0 ? `${shown.join('\n')}\n… and ${more} more` : shown.join('\n');
}

/**
 * The plan as a text table, one line per action kind (with a few examples), then the
 * lines that need a person: unsupported changes, rows that cannot be planned, and a
 * refusal. No colour codes, so it reads the same in a log file.
 */
export function formatPlanTable(plan: Plan, options: { width?: number } = {}): string {
  // The examples column takes what the first two (25 and 7 wide) leave of `width`, less
  // 4 borders and its own padding of 2, and one column to spare.
  const exampleWidth = options.width === undefined ? Infinity : Math.max(20, options.width - 25 - 7 - 4 - 2 - 1);
  const table = new Table({ head: ['action', 'count', 'examples'], style: { head: [], border: [], compact: true }, wordWrap: false });
  for (const kind of ACTION_KINDS) {
    const items = plan.actions.filter((a) => a.kind === kind);
    table.push([kind, plan.counts[kind], examples(items, exampleWidth)]);
  }
  table.push(['unchanged', plan.unchanged, '']);
  table.push(['unsupported change', plan.unsupported.length, examples(plan.unsupported, exampleWidth)]);
  table.push(['cannot plan (row error)', plan.errors.length, examples(plan.errors, exampleWidth)]);
  table.push(['not created (inactive)', plan.notes.length, examples(plan.notes, exampleWidth)]);
  const lines = [`Plan (${plan.mode} mode; ${plan.activeCount} active employees applied; disable limit ${plan.maxDisable})`, plan.platform, table.toString()];
  const repairs = plan.actions.filter((a) => a.repair !== undefined);
  if (repairs.length > 0) lines.push(`drift repaired by this plan: ${repairs.length} actions (counted above and in the guards)`);
  for (const a of repairs.slice(0, 20)) lines.push(`repair: ${a.kind} ${a.employeeId} (${a.email})${a.groupId === undefined ? '' : ` → ${a.groupId}`}: ${a.repair}`);
  if (repairs.length > 20) lines.push(`repair: … and ${repairs.length - 20} more (see the plan JSON)`);
  for (const d of plan.drift.slice(0, 20)) lines.push(`drift (not repaired): ${d.message}`);
  if (plan.drift.length > 20) lines.push(`drift (not repaired): … and ${plan.drift.length - 20} more (see the plan JSON)`);
  for (const u of plan.unsupported.slice(0, 20)) lines.push(`unsupported: ${u.message}`);
  if (plan.unsupported.length > 20) lines.push(`unsupported: … and ${plan.unsupported.length - 20} more (see the plan JSON)`);
  for (const e of plan.errors.slice(0, 20)) lines.push(`error: ${e.message}`);
  if (plan.errors.length > 20) lines.push(`error: … and ${plan.errors.length - 20} more (see the plan JSON)`);
  if (plan.refused !== undefined) lines.push(`REFUSED (${plan.refused.reason}): ${plan.refused.message}`);
  return lines.join('\n');
}

/** The plan as JSON; the plan is plain data, so this round-trips through JSON.parse. */
export function planToJson(plan: Plan): string {
  return JSON.stringify(plan, null, 2);
}
