import Table from 'cli-table3';

/** The widest a table printed for a person may be (--json carries everything). */
export const TABLE_WIDTH = 100;

export interface FitTableOptions {
  /** Columns that give way (wrapped) when the table is too wide; default the last. */
  flex?: readonly number[];
  width?: number;
}

const text = (cell: unknown): string => (cell instanceof Date ? cell.toISOString().replace(/\.\d{3}Z$/, 'Z').replace('T', ' ') : cell === null || cell === undefined ? '' : String(cell));

/**
 * A compact table at most `width` columns wide: the flexible columns are narrowed and
 * their cells wrapped, the others keep their natural width.
 */
export function fitTable(head: readonly string[], rows: ReadonlyArray<readonly unknown[]>, options: FitTableOptions = {}): string {
  const width = options.width ?? TABLE_WIDTH;
  const cells = rows.map((row) => row.map(text));
  // cli-table3 pads each cell by one space on each side, and draws one border per column plus one.
  const natural = head.map((h, i) => Math.max(h.length, ...cells.map((row) => (row[i] ?? '').length)) + 2);
  const borders = head.length + 1;
  const flex = options.flex ?? [head.length - 1];
  const colWidths = [...natural];
  let excess = natural.reduce((a, b) => a + b, 0) + borders - width;
  // Narrow the widest flexible column first, down to 8, until the table fits.
  while (excess > 0) {
    const widest = flex.filter((i) => colWidths[i]! > 8).sort((a, b) => colWidths[b]! - colWidths[a]!)[0];
    if (widest === undefined) break;
    const cut = Math.min(excess, colWidths[widest]! - 8);
    colWidths[widest]! -= cut;
    excess -= cut;
  }
  const table = new Table({ head: [...head], colWidths, wordWrap: true, wrapOnWordBoundary: true, style: { head: [], border: [], compact: true } });
  for (const row of cells) table.push(row);
  return table.toString();
}
