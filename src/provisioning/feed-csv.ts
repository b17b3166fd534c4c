import { createReadStream } from 'node:fs';
import { Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parse, type CsvError } from 'csv-parse';
import { resolveHeader, type HeaderResolution } from './feed-columns.ts';
import type { FeedCollector } from './feed-collector.ts';
import { LineIndex } from './feed-lines.ts';
import type { FeedRecord } from './feed-row.ts';
import type { ColumnMap } from './feed-types.ts';

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

/** Splits a line on commas, dropping quotes: good enough to salvage keys from text that failed to parse. */
function naiveSplit(text: string): string[] {
  return text.split(',').map((v) => v.replace(/^\s*"|"\s*$/g, '').trim());
}

function skipReason(error: CsvError | undefined, width: number): string {
  switch (error?.code) {
    case 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH': {
      const got = Array.isArray(error.record) ? error.record.length : undefined;
      const cut = got !== undefined && got < width ? ' (the file may have been cut off, or a line broken inside a value)' : ' (a value holding a comma must be in double quotes)';
      return `the record has ${got ?? 'a different number of'} values but the header has ${width} columns${cut}; fix the row in the HR export`;
    }
    case 'CSV_QUOTE_NOT_CLOSED':
      return 'a value opened with a double quote here is never closed, so the file looks truncated (or a closing quote is missing); everything from here to the end of the file is left out; fix the HR export';
    default:
      return `the record cannot be read (${error?.message ?? 'unknown CSV error'}); fix the row in the HR export`;
  }
}

/**
 * Streams a CSV feed into the collector. Records are handled inside csv-parse's
 * `on_record`/`on_skip` callbacks, which run in file order, so a broken record is
 * reported at its own line and parsing carries on with the next one.
 */
export async function readCsvInto(path: string, file: string, map: ColumnMap | undefined, collector: FeedCollector): Promise<{ hash: string; lineCount: number }> {
  const lines = new LineIndex();
  let header: HeaderResolution | undefined;
  let previousEnd = 0;
  const parser = parse({
    bom: true,
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
      } else if (header.ok) {
        collector.add(line, toRecord(values, header.indexes));
      }
      return null;
    },
    on_skip: (error: CsvError | undefined, raw: string | undefined) => {
      const line = lines.lineAt(previousEnd);
      previousEnd = parser.info.bytes;
      if (header === undefined || !header.ok) return undefined;
      const partial = Array.isArray(error?.record) ? toRecord(error.record as string[], header.indexes) : {};
      collector.malformed(line, skipReason(error, header.width), partial);
      // An unclosed quote swallows the rest of the file: protect every key in it from being taken for a leaver.
      if (raw !== undefined && !Array.isArray(error?.record)) {
        for (const text of raw.split(/\r?\n|\r/)) {
          collector.protect(toRecord(naiveSplit(text), header.indexes));
        }
      }
      return undefined;
    },
  });
  const tap = new Transform({
    transform(chunk: Buffer, _encoding, done): void {
      lines.push(chunk);
      done(null, chunk);
    },
  });
  const sink = new Writable({ objectMode: true, write: (_record, _encoding, done) => done() });
  try {
    await pipeline(createReadStream(path), tap, parser, sink);
  } catch (error) {
    collector.fileError(`cannot read ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (header === undefined && !collector.hasFileErrors) {
    collector.fileError(`${file} is empty: expected a header row naming the columns (at least employee_id and email)`);
  }
  return { hash: lines.digest(), lineCount: lines.lineCount };
}
