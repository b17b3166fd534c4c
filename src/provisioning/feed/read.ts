import { basename, extname } from 'node:path';
import { FeedCollector, type KeepRows } from './collector.ts';
import { readCsvInto } from './csv.ts';
import { compileDateFormat, utcToday } from './date-format.ts';
import { readJsonlInto } from './jsonl.ts';
import type { FeedFormat, FeedReadResult, FeedReading, ReadFeedOptions } from './types.ts';

/** `.jsonl`, `.ndjson` and `.json` files are JSON Lines; anything else is read as CSV. */
export function feedFormatFor(path: string): FeedFormat {
  const ext = extname(path).toLowerCase();
  return ext === '.jsonl' || ext === '.ndjson' || ext === '.json' ? 'jsonl' : 'csv';
}

/**
 * Reads an HR feed (CSV with a header row, or JSON Lines; UTF-8, UTF-16 with a BOM, or the
 * encoding the profile names, e.g. Windows-1252),
 * streaming: only the valid rows are held. Bad rows are reported and left out; their keys are kept so the
 * planner never disables an employee whose row merely failed to read. A profile's
 * options (see profile.ts) add status words, the end-date leaver rule and the attributes kept.
 */
export async function readFeed(path: string, options: ReadFeedOptions = {}): Promise<FeedReadResult> {
  return (await readInto(path, options)).result;
}

/**
 * Reads a feed as `readFeed` does but holds only its first `rows` valid rows (`totals` counts
 * them all), for `feed check`: the memory is the keys (for the duplicate rule) and the row
 * errors, not the rows. When a later duplicate knocks out one of the first rows, the file is
 * read a second time, skipping the rows left out, so the rows shown are the same as readFeed's.
 */
export async function readFeedSummary(path: string, options: ReadFeedOptions, rows: number): Promise<FeedReadResult> {
  const first = await readInto(path, options, { rows });
  const { result, dropped } = first;
  const wanted = Math.min(rows, result.totals?.valid ?? 0);
  if (result.rows.length >= wanted) return result;
  const again = await readInto(path, { ...options, onProgress: undefined }, { rows, skip: dropped });
  return { ...result, rows: again.result.rows };
}

async function readInto(path: string, options: ReadFeedOptions, keepRows?: KeepRows): Promise<{ result: FeedReadResult; dropped: ReadonlySet<number> }> {
  const format = options.format ?? feedFormatFor(path);
  const file = basename(path);
  const leaver = options.leaverRule;
  const collector = new FeedCollector(
    file,
    options.map,
    {
      statusMap: options.statusMap,
      attributes: options.attributes,
      // The format was checked when the profile was read; a bad one here is a programming error.
      leaver: leaver === undefined ? undefined : { column: leaver.column, format: compileDateFormat(leaver.dateFormat), today: options.today ?? utcToday() },
    },
    keepRows,
  );
  const progress = options.onProgress;
  let bytesRead = 0;
  const onBytes =
    progress === undefined
      ? undefined
      : (bytes: number): void => {
          bytesRead = bytes;
          progress(bytes, collector.recordCount);
        };
  // Told before the parser reads each chunk: once more at the end, with every record counted.
  const finished = (): void => progress?.(bytesRead, collector.recordCount);
  const reading: FeedReading = { format, map: options.map ?? new Map() };
  if (format === 'jsonl') {
    const info = await readJsonlInto(path, file, { map: options.map, encoding: options.encoding, onBytes }, collector);
    finished();
    if (info.encoding !== undefined) Object.assign(reading, { encoding: info.encoding, encodingSource: info.encodingSource });
    return { result: { ...collector.finish(info.hash, info.lineCount), reading }, dropped: collector.droppedLines };
  }
  const info = await readCsvInto(
    path,
    file,
    { map: options.map, delimiter: options.delimiter, encoding: options.encoding, leaverColumn: leaver?.column, attributes: options.attributes, onBytes },
    collector,
  );
  finished();
  if (info.encoding !== undefined) Object.assign(reading, { encoding: info.encoding, encodingSource: info.encodingSource });
  Object.assign(reading, { delimiter: info.delimiter, delimiterDetected: info.delimiterDetected, attributes: info.attributes });
  return { result: { ...collector.finish(info.hash, info.lineCount), reading }, dropped: collector.droppedLines };
}
