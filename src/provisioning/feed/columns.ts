import { TrainsyncError } from '../../lib/errors.ts';
import { FEED_FIELDS, REQUIRED_FEED_FIELDS, type ColumnMap, type FeedField } from './types.ts';

/** Thrown for a `--map` value that cannot be used; the message says how to fix it. */
export class ColumnMapError extends TrainsyncError {
  constructor(message: string) {
    super(message, { code: 'INVALID_COLUMN_MAP', retryable: false });
    this.name = 'ColumnMapError';
  }
}

function isFeedField(value: string): value is FeedField {
  return (FEED_FIELDS as readonly string[]).includes(value);
}

/**
 * Parses `--map "email=Work Email,employee_id=Emp No"`. Header names keep their inner
 * spaces and case (headers are matched exactly, after trimming), so a map can name any
 * real export's column.
 */
export function parseColumnMap(text: string): Map<FeedField, string> {
  const map = new Map<FeedField, string>();
  for (const part of text.split(',')) {
    if (part.trim() === '') continue;
    const eq = part.indexOf('=');
    const field = (eq < 0 ? part : part.slice(0, eq)).trim();
    const column = eq < 0 ? '' : part.slice(eq + 1).trim();
    if (!isFeedField(field)) {
      throw new ColumnMapError(
        `--map: ${JSON.stringify(field)} is not a feed field; valid fields: ${FEED_FIELDS.join(', ')} (write field=Header, e.g. --map "email=Work Email")`,
      );
    }
    if (column === '') {
      throw new ColumnMapError(`--map: ${field} has no header name; write ${field}=Header, e.g. --map "email=Work Email"`);
    }
    if (map.has(field)) throw new ColumnMapError(`--map: ${field} is mapped twice`);
    map.set(field, column);
  }
  return map;
}

/** The column each field is read from. */
export function columnFor(field: FeedField, map: ColumnMap | undefined): string {
  return map?.get(field) ?? field;
}

/** `email` or `email (column "Work Email")`, for messages. */
export function describeField(field: FeedField, map: ColumnMap | undefined): string {
  const column = columnFor(field, map);
  return column === field ? field : `${field} (column ${JSON.stringify(column)})`;
}

export type HeaderResolution =
  | { ok: true; indexes: Map<FeedField, number>; width: number }
  | { ok: false; error: string };

/**
 * Finds each field's column in a CSV header row. A missing required field is a file
 * error that names what is missing, what was found and the `--map` that would fix it.
 */
export function resolveHeader(file: string, header: readonly string[], map: ColumnMap | undefined): HeaderResolution {
  const trimmed = header.map((h) => h.trim());
  const indexes = new Map<FeedField, number>();
  for (const field of FEED_FIELDS) {
    const column = columnFor(field, map);
    const first = trimmed.indexOf(column);
    if (first < 0) continue;
    if (trimmed.indexOf(column, first + 1) >= 0) {
      return { ok: false, error: `${file} line 1: the header has the column ${JSON.stringify(column)} twice; keep one in the HR export` };
    }
    indexes.set(field, first);
  }
  const missing = REQUIRED_FEED_FIELDS.filter((f) => !indexes.has(f));
  if (missing.length > 0) {
    const wanted = missing.map((f) => columnFor(f, map));
    const example = missing.map((f) => `${f}=<Header>`).join(',');
    return {
      ok: false,
      error:
        `${file} line 1: the header has no column for ${missing.join(', ')} (looked for ${wanted.map((w) => JSON.stringify(w)).join(', ')}); ` +
        `headers found: ${trimmed.map((h) => JSON.stringify(h)).join(', ')}. ` +
        `If the export names them differently, map them: --map "${example}"`,
    };
  }
  return { ok: true, indexes, width: header.length };
}
