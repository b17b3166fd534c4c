import Table from 'cli-table3';

/** The widest a table printed for a person may be (--json carries everything). */
export const TABLE_WIDTH = 100;

/** TABLE_WIDTH, or the terminal's width when stdout is a narrower terminal. */
export function tableWidth(): number {
  return process.stdout.isTTY && process.stdout.columns ? Math.min(TABLE_WIDTH, process.stdout.columns) : TABLE_WIDTH;
}

export interface FitTableOptions {
  /** Columns that give way (wrapped) when the table is too wide, the last named first; default the last column. */
  flex?: readonly number[];
  width?: number;
}

const text = (cell: unknown): string => (cell instanceof Date ? cell.toISOString().replace(/\.\d{3}Z$/, 'Z').replace('T', ' ') : cell === null || cell === undefined ? '' : String(cell));

/**
 * A compact table at most `width` columns wide: the flexible columns are narrowed and
 * their cells wrapped, the others keep their natural width.
 */
export function fitTable(head: readonly string[], rows: ReadonlyArray<readonly unknown[]>, options: FitTableOptions = {}): string {
  const width = options.width ?? tableWidth();
  const cells = rows.map((row) => row.map(text));
  // cli-table3 pads each cell by one space on each side, and draws one border per column plus one.
  const natural = head.map((h, i) => Math.max(h.length, ...cells.map((row) => (row[i] ?? '').length)) + 2);
  const borders = head.length + 1;
  const flex = options.flex ?? [head.length - 1];
  const colWidths = [...natural];
  let excess = natural.reduce((a, b) => a + b, 0) + borders - width;
  // Narrow the flexible columns, the last named first, each down to 8, until the table fits.
  for (const i of [...flex].reverse()) {
    if (excess <= 0) break;
    const cut = Math.max(0, Math.min(excess, colWidths[i]! - 8));
    colWidths[i]! -= cut;
    excess -= cut;
  }
  const table = new Table({ head: [...head], colWidths, wordWrap: true, wrapOnWordBoundary: true, style: { head: [], border: [], compact: true } });
  for (const row of cells) table.push(row);
  return table.toString();
}
