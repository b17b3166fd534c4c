import { createReadStream } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { columnFor } from './feed-columns.ts';
import type { FeedCollector } from './feed-collector.ts';
import { LineIndex } from './feed-lines.ts';
import type { FeedRecord } from './feed-row.ts';
import { FEED_FIELDS, type ColumnMap } from './feed-types.ts';

function toRecord(object: Record<string, unknown>, map: ColumnMap | undefined): FeedRecord {
  const record: FeedRecord = {};
  for (const field of FEED_FIELDS) {
    const column = columnFor(field, map);
    if (Object.hasOwn(object, column)) record[field] = object[column];
  }
  return record;
}

/** Salvages the keys of a line that is not valid JSON, so a cut-off line is never taken for a leaver. */
function salvageKeys(text: string, map: ColumnMap | undefined): FeedRecord {
  const record: FeedRecord = {};
  for (const field of ['employee_id', 'email'] as const) {
    const key = JSON.stringify(columnFor(field, map));
    const at = text.indexOf(key);
    if (at < 0) continue;
    const m = /^\s*:\s*(?:"((?:[^"\\]|\\.)*)"|(-?\d+))/.exec(text.slice(at + key.length));
    if (m) record[field] = m[1] ?? m[2];
  }
  return record;
}

/** Streams a JSON Lines feed (one object per line) into the collector. */
export async function readJsonlInto(path: string, file: string, map: ColumnMap | undefined, collector: FeedCollector): Promise<{ hash: string; lineCount: number }> {
  const lines = new LineIndex();
  const decoder = new StringDecoder('utf8');
  let pending = '';
  let lineNo = 0;
  const handle = (raw: string): void => {
    lineNo += 1;
    let text = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (lineNo === 1 && text.startsWith('\uFEFF')) text = text.slice(1);
    if (text.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      collector.malformed(lineNo, `not valid JSON (${why}); each line must be one complete JSON object; fix the line in the HR export`, salvageKeys(text, map), 'invalid-json');
      return;
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      collector.malformed(lineNo, 'not a JSON object; each line must be one object such as {"employee_id": "E1", "email": "a@example.com"}', {}, 'invalid-json');
      return;
    }
    collector.add(lineNo, toRecord(value as Record<string, unknown>, map));
  };
  try {
    for await (const chunk of createReadStream(path)) {
      const bytes = chunk as Buffer;
      lines.push(bytes);
      pending += decoder.write(bytes);
      let nl = pending.indexOf('\n');
      while (nl >= 0) {
        handle(pending.slice(0, nl));
        pending = pending.slice(nl + 1);
        nl = pending.indexOf('\n');
      }
    }
    pending += decoder.end();
    if (pending !== '') handle(pending);
  } catch (error) {
    collector.fileError(`cannot read ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
  return { hash: lines.digest(), lineCount: lines.lineCount };
}
