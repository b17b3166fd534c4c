import type { FeedRow, RowList } from '../feed/types.ts';
import type { PlannedAction, PlanMode } from '../plan/types.ts';
import type { SourceKind } from './types.ts';

/**
 * Why an action was planned, for its audit row (`reason`), in the same words whatever the
 * source: where the desired state said so (a feed's line, a SCIM User, the snapshot) and
 * what it said; a repair says the drift it repairs. Pure.
 */

export interface ReasonContext {
  kind: SourceKind;
  label: string;
  mode: PlanMode;
  /** The desired rows by employee id. */
  rows: ReadonlyMap<string, FeedRow>;
}

function where(ctx: ReasonContext, row: FeedRow | undefined): string {
  if (row === undefined) return ctx.label;
  if (ctx.kind === 'feed') return `${ctx.label} line ${row.line}`;
  if (ctx.kind === 'scim') return `SCIM User ${row.employeeId}`;
  return `${ctx.label} (${row.employeeId})`;
}

export function actionReason(action: PlannedAction, ctx: ReasonContext): string {
  const row = ctx.rows.get(action.employeeId);
  const at = where(ctx, row);
  if (action.repair !== undefined) return `${at}: drift repaired: ${action.repair}`;
  switch (action.kind) {
    case 'create-user':
      return `${at}: new employee, active`;
    case 'disable':
      return row === undefined ? `${at}: not listed (${ctx.mode} mode): a leaver` : `${at}: status inactive`;
    case 'enable':
      return `${at}: status active again`;
    case 'add-to-group':
      return `${at}: in group ${action.groupId ?? ''}`;
    case 'remove-from-group':
      return `${at}: no longer in group ${action.groupId ?? ''}`;
  }
}

/** Every action's reason, by action id. */
export function actionReasons(actions: Iterable<PlannedAction>, ctx: Omit<ReasonContext, 'rows'> & { rows: RowList }): Map<string, string> {
  const rows = new Map(ctx.rows.map((r) => [r.employeeId, r]));
  const reasons = new Map<string, string>();
  for (const a of actions) reasons.set(a.id, actionReason(a, { ...ctx, rows }));
  return reasons;
}
