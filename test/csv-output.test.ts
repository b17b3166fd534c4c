import { parse } from 'csv-parse/sync';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatPlanFile } from '../src/commands/render/plan-output.ts';
import { csvCellValue, csvSafeCell, stringifyCsv } from '../src/lib/csv.ts';
import { PlanActions } from '../src/provisioning/plan/plan-actions.ts';
import type { Plan, PlannedAction } from '../src/provisioning/plan/types.ts';

/**
 * Every CSV trainsync writes (src/lib/csv.ts, used by `provision --output plan.csv`):
 * no cell a spreadsheet opens starts with a formula character (=, +, -, @, tab, CR),
 * whatever the HR feed held, and the escaping is reversible (one leading ' removed).
 */

const FORMULA_START = /^[=+\-@\t\r]/;

function action(fields: Partial<PlannedAction>): PlannedAction {
  return {
    id: 'act-1',
    kind: 'add-to-group',
    employeeId: 'E1',
    email: 'e1@example.com',
    groupId: '11111111-1111-4111-8111-111111111111',
    platformUserId: null,
    seq: 1,
    baseVersion: 0,
    before: null,
    after: { email: 'e1@example.com' } as PlannedAction['after'],
    ...fields,
  };
}

function planOf(actions: PlannedAction[]): Plan {
  return { actions: PlanActions.of(actions), counts: { 'add-to-group': actions.length } } as unknown as Plan;
}

const cellsOf = (text: string): string[][] => parse(text, { relax_column_count: false }) as string[][];

describe('CSV output', () => {
  it("provision --output plan.csv: an HR value starting with =, +, -, @, tab or CR is written with a ' in front", () => {
    const hostile = ["=cmd|' /C calc'!A1", '+1+1', '-2+3', '@SUM(A1:A9)', '\t=1', '\r=1'];
    const names = new Map(hostile.map((h, i) => [`11111111-1111-4111-8111-11111111111${i}`, h]));
    const plan = planOf(hostile.map((h, i) => action({ id: `act-${i}`, employeeId: h, groupId: `11111111-1111-4111-8111-11111111111${i}` })));
    const rows = cellsOf(formatPlanFile(plan, 'csv', names));
    expect(rows[0]).toEqual(['kind', 'employee_id', 'email', 'group_id', 'group_name', 'platform_user_id', 'repair', 'before', 'after', 'action_id']);
    for (const row of rows) for (const cell of row) expect(cell, JSON.stringify(cell)).not.toMatch(FORMULA_START);
    expect(rows.slice(1).map((r) => r[1])).toEqual(hostile.map((h) => `'${h}`));
    expect(rows.slice(1).map((r) => csvCellValue(r[4]!))).toEqual(hostile);
  });

  it('any string round-trips: no written cell starts with a formula character, and removing one leading quote gives it back (property)', () => {
    const cell = fc.oneof(fc.string({ unit: 'binary', maxLength: 30 }), fc.constantFrom('=', '+', '-', '@', '\t', '\r', "'", "'=1", "''", '=1;=2', 'a,"b"\n=c'));
    fc.assert(
      fc.property(fc.array(fc.array(cell, { minLength: 3, maxLength: 3 }), { maxLength: 8 }), (rows) => {
        const written = cellsOf(stringifyCsv(['a', 'b', 'c'], rows));
        expect(written).toHaveLength(rows.length + 1);
        for (const row of written) for (const c of row) expect(c).not.toMatch(FORMULA_START);
        expect(written.slice(1).map((r) => r.map(csvCellValue))).toEqual(rows);
      }),
      { numRuns: 200 },
    );
  });

  it('csvSafeCell leaves ordinary text alone and csvCellValue inverts it (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), (s) => {
        expect(csvCellValue(csvSafeCell(s))).toBe(s);
        if (!/^[=+\-@\t\r']/.test(s)) expect(csvSafeCell(s)).toBe(s);
      }),
    );
  });
});
