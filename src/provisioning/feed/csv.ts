import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parse, type CsvError } from 'csv-parse';
import { resolveHeader, type HeaderResolution } from './columns.ts';
import { attributePairs } from './attributes.ts';
import type { FeedCollector, RecordExtras } from './collector.ts';
import { delimiterName, detectDelimiter } from './delimiter.ts';
import { FeedDecoder, LineIndex, readFailure, type EncodingSource, type FeedEncoding } from './lines.ts';
import type { FeedRecord } from './row.ts';
import type { AttributeSelection, ColumnMap, FeedDelimiter, FeedField } from './types.ts';

/** How to read one CSV file. */
export interface CsvSettings {
  map?: ColumnMap | undefined;
  /** undefined: detected from the header line. */
  delimiter?: FeedDelimiter | undefined;
  /** For a file without a byte-order mark. */
  encoding?: FeedEncoding | undefined;
  /** The leaver rule's end-date column: the header must have it. */
  leaverColumn?: string | undefined;
  /** Listed attribute columns must be in the header. */
  attributes?: AttributeSelection | undefined;
  /** Told the bytes read so far, every chunk. */
  onBytes?: ((bytesRead: number) => void) | undefined;
}

export interface CsvReadInfo {
  hash: string;
  lineCount: number;
  encoding?: FeedEncoding;
  encodingSource?: EncodingSource;
  delimiter: FeedDelimiter;
  delimiterDetected: boolean;
  /** The attributes kept and their columns (empty until the header was read). */
  attributes: { name: string; column: string }[];
}

/** Bytes read to find the header line for delimiter detection. */
const SNIFF_BYTES = 64 * 1024;

/**
 * The header line's text (the first that is not blank), decoded as the reader will decode it; '' when the file cannot
 * be read or decoded (the main pass then reports why, at its line).
 */
async function headerLine(path: string, encoding: FeedEncoding | undefined): Promise<string> {
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    handle = await open(path, 'r');
    const buffer = Buffer.alloc(SNIFF_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, SNIFF_BYTES, 0);
    const decoder = new FeedDecoder(encoding);
    // Never end(): the sample may stop inside a character, which is not an error of the file.
    const text = decoder.write(buffer.subarray(0, bytesRead));
    // The parser skips blank lines, so the header is the first line with text.
    return text.split('\n').find((line) => line.trim() !== '') ?? '';
  } catch {
    return '';
  } finally {
    await handle?.close();
  }
}

/** Columns other than fields, read into `extras`: header name → index (the first of a repeated name). */
function extraColumns(
  file: string,
  header: readonly string[],
  fields: ReadonlyMap<FeedField, number>,
  settings: CsvSettings,
): { ok: true; columns: Map<string, number>; kept: { name: string; column: string }[] } | { ok: false; error: string } {
  const trimmed = header.map((h) => h.trim());
  const fieldIndexes = new Set(fields.values());
  const columns = new Map<string, number>();
  trimmed.forEach((name, index) => {
    if (name !== '' && !fieldIndexes.has(index) && !columns.has(name)) columns.set(name, index);
  });
  const found = `headers found: ${trimmed.map((h) => JSON.stringify(h)).join(', ')}`;
  const pairs = attributePairs(settings.attributes);
  const wanted = [...(settings.leaverColumn !== undefined ? [settings.leaverColumn] : []), ...(typeof pairs === 'string' ? [] : pairs.map(([, column]) => column))];
  for (const name of wanted) {
    const index = trimmed.indexOf(name.trim());
    if (index < 0) {
      const role = name === settings.leaverColumn ? `the end date (the profile's "leaverRule.column")` : `an attribute (the profile's "attributes")`;
      return {
        ok: false,
        error: `${file} line 1: the header has no column ${JSON.stringify(name)}, named as ${role}; ${found}. Fix the profile, or the export`,
      };
    }
    // A listed column is read even when it is also a field's column.
    if (!columns.has(name)) columns.set(name, index);
  }
  const kept =
    pairs === 'none' ? [] : pairs === 'all' ? [...columns.keys()].map((column) => ({ name: column, column })) : pairs.map(([name, column]) => ({ name, column }));
  return { ok: true, columns, kept };
}

function toExtras(values: readonly string[], columns: ReadonlyMap<string, number>): RecordExtras {
  const entries: [string, string][] = [];
  for (const [name, index] of columns) {
    // Empty cells are left out: an attribute is absent or has a value, never "".
    const value = values[index]?.trim();
    if (value !== undefined && value !== '') entries.push([name, value]);
  }
  return Object.fromEntries(entries);
}

function toRecord(values: readonly string[], indexes: ReadonlyMap<string, number>): FeedRecord {
  const record: Record<string, string> = {};
  for (const [field, index] of indexes) {
    const value = values[index];
    if (value !== undefined) record[field] = value;
  }
  return record;
}

function recordOf(entry: unknown): string[] {
  const record = Array.isArray(entry) ? entry : (entry as { record?: unknown }).record;
  if (!Array.isArray(record)) throw new Error('csv-parse returned a record that is not an array');
  return record.map((v) => String(v));
}

/**
 * Line on which the quote still open at the end of `raw` was opened: with a multi-line
 * value before it, that is not the record's first line. `raw` is the record that starts on
 * `line`, after the line breaks of any blank lines csv-parse skipped before it (dropped
 * here). Follows csv-parse with `relax_quotes`: a quote opens only at the start of a
 * field, and inside quotes `""` is a quote while a lone `"` closes.
 */
function openQuoteLine(raw: string, line: number, delimiter: FeedDelimiter): number {
  const text = raw.replace(/^[\r\n]+/, '');
  let current = line;
  let opened = line;
  let quoting = false;
  let fieldStart = true;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (c === '\n') current += 1;
    if (quoting) {
      if (c === '"' && text[i + 1] === '"') i += 1;
      else if (c === '"') quoting = false;
      continue;
    }
    if (c === '"' && fieldStart) {
      quoting = true;
      opened = current;
    }
    fieldStart = c === delimiter || c === '\n' || c === '\r';
  }
  return opened;
}

function skipReason(error: CsvError | undefined, width: number, delimiter: FeedDelimiter): string {
  switch (error?.code) {
    case 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH': {
      const got = Array.isArray(error.record) ? error.record.length : undefined;
      const cut = got !== undefined && got < width ? ' (the file may have been cut off, or a line broken inside a value)' : ` (a value holding a ${delimiter === ',' ? 'comma' : delimiterName(delimiter)} must be in double quotes)`;
      return `the record has ${got ?? 'a different number of'} values but the header has ${width} columns${cut}; fix the row in the HR export`;
    }
    default:
      return `the record cannot be read (${error?.message ?? 'unknown CSV error'}); fix the row in the HR export`;
  }
}

/**
 * Streams a CSV feed into the collector. Records are handled inside csv-parse's
 * `on_record`/`on_skip` callbacks, which run in file order, so a broken record is
 * reported at its own line and parsing carries on with the next one. Two problems stop
 * the whole file instead (a file error, so nothing is planned): bytes that do not decode,
 * and a quote never closed, which swallows every row after it. The separator, unless
 * given, is detected from the header line (`,` `;` tab `|`), so a semicolon export reads
 * as it is. Columns that are not fields travel with each record as `extras`.
 */
export async function readCsvInto(path: string, file: string, settings: CsvSettings, collector: FeedCollector): Promise<CsvReadInfo> {
  const { map } = settings;
  const delimiter = settings.delimiter ?? detectDelimiter(await headerLine(path, settings.encoding));
  const decoder = new FeedDecoder(settings.encoding);
  const lines = new LineIndex();
  let header: HeaderResolution | undefined;
  let extras = new Map<string, number>();
  let kept: { name: string; column: string }[] = [];
  let previousEnd = 0;
  const parser = parse({
    // No `bom` option: FeedDecoder already dropped the BOM and hands over UTF-8.
    delimiter,
    columns: false,
    relax_column_count: false,
    relax_quotes: true,
    skip_empty_lines: true,
    skip_records_with_error: true,
    raw: true,
    // With `raw: true` csv-parse hands over `{ record, raw }`, though its types say `string[]`.
    on_record: (entry: unknown, context) => {
      const values = recordOf(entry);
      const line = lines.lineAt(previousEnd);
      previousEnd = context.bytes;
      if (header === undefined) {
        header = resolveHeader(file, values, map);
        if (!header.ok) collector.fileError(header.error);
        else {
          const other = extraColumns(file, values, header.indexes, settings);
          if (other.ok) ({ columns: extras, kept } = other);
          else {
            collector.fileError(other.error);
            header = { ok: false, error: other.error };
          }
        }
      } else if (header.ok) {
        collector.add(line, toRecord(values, header.indexes), toExtras(values, extras));
      }
      return null;
    },
    on_skip: (error: CsvError | undefined, raw: string | undefined) => {
      const line = lines.lineAt(previousEnd);
      previousEnd = parser.info.bytes;
      if (error?.code === 'CSV_QUOTE_NOT_CLOSED') {
        // Everything after the quote is one unreadable value: rows are missing, so no plan (their employees would look like leavers).
        collector.fileError(
          `${file} line ${openQuoteLine(raw ?? '', line, delimiter)}: a value opened with a double quote is never closed, so the file looks cut off (or a closing quote is missing); ` +
            'nothing was planned: export the file again',
        );
        return undefined;
      }
      if (header === undefined || !header.ok) return undefined;
      const partial = Array.isArray(error?.record) ? toRecord(error.record as string[], header.indexes) : {};
      collector.malformed(line, skipReason(error, header.width, delimiter), partial);
      return undefined;
    },
  });
  // Bytes → text → UTF-8 for csv-parse, indexed on the way so its offsets and our lines agree.
  const index = (text: string): Buffer | undefined => {
    if (text === '') return undefined;
    const bytes = Buffer.from(text, 'utf8');
    lines.push(bytes);
    return bytes;
  };
  let bytesRead = 0;
  const decode = new Transform({
    transform(chunk: Buffer, _encoding, done): void {
      bytesRead += chunk.length;
      settings.onBytes?.(bytesRead);
      try {
        done(null, index(decoder.write(chunk)));
      } catch (error) {
        done(error as Error);
      }
    },
    flush(done): void {
      try {
        done(null, index(decoder.end()));
      } catch (error) {
        done(error as Error);
      }
    },
  });
  const sink = new Writable({ objectMode: true, write: (_record, _encoding, done) => done() });
  try {
    await pipeline(createReadStream(path), decode, parser, sink);
  } catch (error) {
    collector.fileError(readFailure(file, error));
  }
  if (header === undefined && !collector.hasFileErrors) {
    collector.fileError(`${file} is empty: expected a header row naming the columns (at least employee_id and email)`);
  }
  const encoding = decoder.detectedEncoding;
  return {
    hash: decoder.digest(),
    lineCount: decoder.lineCount,
    ...(encoding !== undefined ? { encoding, encodingSource: decoder.encodingSource } : {}),
    delimiter,
    delimiterDetected: settings.delimiter === undefined,
    attributes: kept,
  };
}
