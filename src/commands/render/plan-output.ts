import { csvChunks } from '../../lib/csv.ts';
import { jsonChunks } from '../../lib/json-stream.ts';
import { groupLabel, type GroupNames } from '../../provisioning/group-names.ts';
import { ACTION_KINDS, type Plan, type PlannedAction } from '../../provisioning/plan/types.ts';

/**
 * `provision --dry-run --output FILE`: every action of the plan, by the file's name:
 * `.csv` CSV (a header, one action a row; a cell that would start with a formula character
 * starts with `'`, see src/lib/csv.ts), `.json` the whole plan as one JSON document
 * (as --json prints it), anything else JSON Lines (one action a line; e.g. plan.jsonl).
 */
export type PlanFileFormat = 'csv' | 'json' | 'jsonl';

export function planFileFormat(file: string): PlanFileFormat {
  const lower = file.toLowerCase();
  return lower.endsWith('.csv') ? 'csv' : lower.endsWith('.json') ? 'json' : 'jsonl';
}

/** How the format is named to a person. */
export const PLAN_FILE_FORMAT_NAME: Readonly<Record<PlanFileFormat, string>> = { csv: 'CSV', json: 'one JSON document', jsonl: 'JSON Lines' };

/** The plan's actions in the order a person reads them: by kind, then as planned; read one at a time. */
function* ordered(plan: Plan): Generator<PlannedAction> {
  for (const kind of ACTION_KINDS) yield* plan.actions.ofKind(kind);
}

/** One action as a flat record: the GUID and the group's name side by side. */
function record(a: PlannedAction, names: GroupNames): Record<string, unknown> {
  return {
    kind: a.kind,
    employeeId: a.employeeId,
    email: a.email,
    groupId: a.groupId ?? null,
    groupName: a.groupId === undefined ? null : groupLabel(a.groupId, names),
    platformUserId: a.platformUserId,
    repair: a.repair ?? null,
    before: a.before,
    after: a.after,
    id: a.id,
  };
}

const CSV_COLUMNS = ['kind', 'employee_id', 'email', 'group_id', 'group_name', 'platform_user_id', 'repair', 'before', 'after', 'action_id'] as const;

/**
 * The file's text in pieces, one action at a time: a plan of 875,000 actions is written
 * without its text (or its actions as objects) held whole.
 */
export function* planFileChunks(plan: Plan, format: PlanFileFormat, names: GroupNames): Generator<string> {
  if (format === 'json') {
    yield* jsonChunks(plan, 2);
    yield '\n';
    return;
  }
  if (format === 'jsonl') {
    for (const a of ordered(plan)) yield `${JSON.stringify(record(a, names))}\n`;
    return;
  }
  const rows = (function* () {
    for (const a of ordered(plan)) {
      const r = record(a, names);
      yield [r.kind, r.employeeId, r.email, r.groupId, r.groupName, r.platformUserId, r.repair, r.before === null ? '' : JSON.stringify(r.before), JSON.stringify(r.after), r.id];
    }
  })();
  // Cells escaped against formula injection: an HR feed's `=cmd|…` is text in a spreadsheet (src/lib/csv.ts).
  yield* csvChunks(CSV_COLUMNS, rows);
}

/** The file's text whole (a plan of a few people). */
export function formatPlanFile(plan: Plan, format: PlanFileFormat, names: GroupNames): string {
  return [...planFileChunks(plan, format, names)].join('');
}
