import { createReadStream } from 'node:fs';
import { Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parse, type CsvError } from 'csv-parse';
import { resolveHeader, type HeaderResolution } from './columns.ts';
import type { FeedCollector } from './collector.ts';
import { FeedDecoder, LineIndex, readFailure } from './lines.ts';
import type { FeedRecord } from './row.ts';
import type { ColumnMap } from './types.ts';

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
function openQuoteLine(raw: string, line: number): number {
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
    fieldStart = c === ',' || c === '\n' || c === '\r';
  }
  return opened;
}

function skipReason(error: CsvError | undefined, width: number): string {
  switch (error?.code) {
    case 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH': {
      const got = Array.isArray(error.record) ? error.record.length : undefined;
      const cut = got !== undefined && got < width ? ' (the file may have been cut off, or a line broken inside a value)' : ' (a value holding a comma must be in double quotes)';
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
 * and a quote never closed, which swallows every row after it.
 */
export async function readCsvInto(path: string, file: string, map: ColumnMap | undefined, collector: FeedCollector): Promise<{ hash: string; lineCount: number }> {
  const decoder = new FeedDecoder();
  const lines = new LineIndex();
  let header: HeaderResolution | undefined;
  let previousEnd = 0;
  const parser = parse({
    // No `bom` option: FeedDecoder already dropped the BOM and hands over UTF-8.
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
      if (error?.code === 'CSV_QUOTE_NOT_CLOSED') {
        // Everything after the quote is one unreadable value: rows are missing, so no plan (their employees would look like leavers).
        collector.fileError(
          `${file} line ${openQuoteLine(raw ?? '', line)}: a value opened with a double quote is never closed, so the file looks cut off (or a closing quote is missing); ` +
            'nothing was planned: export the file again',
        );
        return undefined;
      }
      if (header === undefined || !header.ok) return undefined;
      const partial = Array.isArray(error?.record) ? toRecord(error.record as string[], header.indexes) : {};
      collector.malformed(line, skipReason(error, header.width), partial);
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
  const decode = new Transform({
    transform(chunk: Buffer, _encoding, done): void {
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
  return { hash: decoder.digest(), lineCount: decoder.lineCount };
}
