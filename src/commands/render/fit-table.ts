import Table from 'cli-table3';
import { fitWidth, MAX_WIDTH, outputWidth, wrapLine } from './terminal.ts';
import { showControls } from '../../lib/terminal-safe.ts';

/** The widest a table printed for a person may be (--json carries everything). */
export const TABLE_WIDTH = MAX_WIDTH;

/** The width tables are drawn to: the terminal's, else COLUMNS, else 100; at most 100 (terminal.ts outputWidth). */
export function tableWidth(): number {
  return outputWidth();
}

export interface FitTableOptions {
  /** Columns that give way (narrowed, their cells wrapped) when the table is too wide, in this order; default the last column. */
  flex?: readonly number[];
  /** Of those, the columns whose cells are cut (…) rather than wrapped: a hint, whole in --json. */
  cut?: readonly number[];
  width?: number;
}

/** A cell's text; control characters from data shown escaped (`\u001b`), so a cell cannot drive the terminal. */
const text = (cell: unknown): string =>
  showControls(cell instanceof Date ? cell.toISOString().replace(/\.\d{3}Z$/, 'Z').replace('T', ' ') : cell === null || cell === undefined ? '' : String(cell));

/** Cell padding (one space each side) and the narrowest a flexible column's text gets. */
const PADDING = 2;
const MIN_FLEX_TEXT = 8;
/** A column that is not flexible gives way only when the flexible ones cannot any more, down to this. */
const MIN_TEXT = 3;

/** A cell's text in lines of at most `width`: wrapped at spaces (a long word at `.`, `@`, `-`…), or cut. */
function fitCell(value: string, width: number, cut: boolean): string {
  return value
    .split('\n')
    .flatMap((line) => (cut ? [fitWidth(line, width)] : wrapLine(line, width, '')))
    .join('\n');
}

const longest = (value: string): number => Math.max(0, ...value.split('\n').map((line) => line.length));

/**
 * A compact table at most `width` columns wide, frame included: the flexible columns
 * are narrowed in turn and their cells wrapped or cut; only when they can give no more
 * do the others (the widest first), so a terminal never cuts the frame itself.
 */
export function fitTable(head: readonly string[], rows: ReadonlyArray<readonly unknown[]>, options: FitTableOptions = {}): string {
  const width = options.width ?? tableWidth();
  const cells = rows.map((row) => head.map((_, i) => text(row[i])));
  const heads = head.map(text);
  const natural = heads.map((h, i) => Math.max(longest(h), ...cells.map((row) => longest(row[i]!))));
  // One border per column plus one.
  const room = width - (head.length + 1) - head.length * PADDING;
  const widths = [...natural];
  const flex = options.flex ?? [head.length - 1];
  let excess = widths.reduce((a, b) => a + b, 0) - room;
  // The flexible columns give way in the order named, each down to 8 characters.
  for (const i of flex) {
    const give = Math.max(0, Math.min(excess, widths[i]! - MIN_FLEX_TEXT));
    widths[i]! -= give;
    excess -= give;
  }
  // Still too wide (a narrow terminal): the widest column gives one character, then again.
  while (excess > 0) {
    const widest = widths.reduce((best, w, i) => (w > widths[best]! ? i : best), 0);
    if (widths[widest]! <= MIN_TEXT) break;
    widths[widest]!--;
    excess--;
  }
  const cut = new Set(options.cut ?? []);
  const fitted = (value: string, i: number): string => (longest(value) <= widths[i]! ? value : fitCell(value, widths[i]!, cut.has(i)));
  // Cells arrive fitted: cli-table3 only draws (its own wrapping would cut long words).
  const table = new Table({ head: heads.map(fitted), colWidths: widths.map((w) => w + PADDING), wordWrap: false, style: { head: [], border: [], compact: true } });
  for (const row of cells) table.push(row.map(fitted));
  return table.toString();
}
