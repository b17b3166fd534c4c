import { stringify } from 'csv-stringify/sync';

/**
 * The one way trainsync writes CSV, so that no file it writes can be turned against
 * the person who opens it in a spreadsheet (CSV or formula injection, OWASP): a cell
 * that begins with `=`, `+`, `-`, `@`, a tab or a carriage return is read by Excel,
 * LibreOffice and Google Sheets as a formula (`=cmd|' /C calc'!A1`, `=HYPERLINK(…)`),
 * whoever put that text in an HR feed. Such a cell is written with a single quote `'`
 * in front, as OWASP advises; a cell that already begins with `'` gets one too, so the
 * escaping is reversible: remove one leading `'` from any cell that has one
 * (`csvCellValue`) and you have the value. Every string cell is quoted as well, so a
 * reader that splits on `;` or a tab (some locales do) cannot cut a cell in two and
 * make its second half start a formula.
 */

/** The first characters a spreadsheet reads as the start of a formula (OWASP's list), and the escape itself. */
const NEEDS_QUOTE_RE = /^[=+\-@\t\r']/;

/** A cell's text as written: one `'` in front of a value that starts with a formula character or with `'`. */
export function csvSafeCell(value: string): string {
  return NEEDS_QUOTE_RE.test(value) ? `'${value}` : value;
}

/** The value a written cell holds: the inverse of `csvSafeCell`. */
export function csvCellValue(cell: string): string {
  return cell.startsWith("'") ? cell.slice(1) : cell;
}

/** A value as a cell's text: empty for null, JSON for an object, else its string. */
function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

const safe = (values: readonly unknown[]): string[] => values.map((value) => csvSafeCell(cellText(value)));
/** Rows a piece of `csvChunks` holds: a piece stays below the size V8 gives an object a page of its own (128 KB). */
const CHUNK_ROWS = 100;

/** A CSV document: a header of `columns`, then one line per row; every cell escaped by `csvSafeCell`. */
export function stringifyCsv(columns: readonly string[], rows: readonly (readonly unknown[])[]): string {
  return [...csvChunks(columns, rows)].join('');
}

/**
 * The same document in pieces (the header, then a hundred rows at a time), for a file
 * too long to hold as one string: each line is written on its own, so the pieces join
 * into exactly `stringifyCsv`'s text.
 */
export function* csvChunks(columns: readonly string[], rows: Iterable<readonly unknown[]>): Generator<string> {
  const options = { quoted_string: true, eof: true } as const;
  yield stringify([safe(columns)], options);
  let chunk: string[][] = [];
  for (const row of rows) {
    chunk.push(safe(row));
    if (chunk.length < CHUNK_ROWS) continue;
    yield stringify(chunk, options);
    chunk = [];
  }
  if (chunk.length > 0) yield stringify(chunk, options);
}
