import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';

/** A value COPY's text format can carry; arrays become Postgres array literals of simple values (uuids). */
export type CopyValue = string | number | boolean | null | readonly string[];

const SPECIAL_RE = /[\\\t\n\r\0]/;
const SPECIAL_GLOBAL_RE = /[\\\t\n\r\0]/g;
// Postgres text cannot hold NUL: it is dropped rather than failing the whole COPY.
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r', '\0': '' };

function escapeText(value: string): string {
  return SPECIAL_RE.test(value) ? value.replace(SPECIAL_GLOBAL_RE, (c) => ESCAPES[c]!) : value;
}

/** One field in COPY text format: `\N` for null, backslash escapes for the rest. */
export function copyField(value: CopyValue): string {
  if (value === null) return '\\N';
  if (typeof value === 'string') return escapeText(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  // Only for uuid arrays: their elements need no quoting inside `{...}`.
  return `{${value.join(',')}}`;
}

/** Encodes rows as COPY text (tab-separated, newline-terminated). */
export function copyLines(rows: Iterable<readonly CopyValue[]>): string {
  let text = '';
  for (const row of rows) {
    text += row.map(copyField).join('\t');
    text += '\n';
  }
  return text;
}

/**
 * `COPY table (columns) FROM STDIN` of the rows on this client (inside the caller's
 * transaction). `table` and `columns` are trusted identifiers from our own code.
 */
export async function copyRows(
  client: pg.PoolClient,
  table: string,
  columns: readonly string[],
  rows: Iterable<readonly CopyValue[]>,
): Promise<void> {
  const stream = client.query(copyFrom(`copy ${table} (${columns.join(', ')}) from stdin`));
  await pipeline(Readable.from([copyLines(rows)]), stream);
}
