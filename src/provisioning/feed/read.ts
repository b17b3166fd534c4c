import { basename, extname } from 'node:path';
import { FeedCollector } from './collector.ts';
import { readCsvInto } from './csv.ts';
import { readJsonlInto } from './jsonl.ts';
import type { FeedFormat, FeedReadResult, ReadFeedOptions } from './types.ts';

/** `.jsonl`, `.ndjson` and `.json` files are JSON Lines; anything else is read as CSV. */
export function feedFormatFor(path: string): FeedFormat {
  const ext = extname(path).toLowerCase();
  return ext === '.jsonl' || ext === '.ndjson' || ext === '.json' ? 'jsonl' : 'csv';
}

/**
 * Reads an HR feed (CSV with a header row, or JSON Lines; UTF-8, or UTF-16 with a BOM),
 * streaming: only the valid rows are held. Bad rows are reported and left out; their keys are kept so the
 * planner never disables an employee whose row merely failed to read.
 */
export async function readFeed(path: string, options: ReadFeedOptions = {}): Promise<FeedReadResult> {
  const format = options.format ?? feedFormatFor(path);
  const file = basename(path);
  const collector = new FeedCollector(file, options.map);
  const read = format === 'jsonl' ? readJsonlInto : readCsvInto;
  const { hash, lineCount } = await read(path, file, options.map, collector);
  return collector.finish(hash, lineCount);
}
