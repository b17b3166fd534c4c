import { errorMessage } from '../../lib/errors.ts';
import { createReadStream } from 'node:fs';
import { columnFor } from './columns.ts';
import type { FeedCollector, RecordExtras } from './collector.ts';
import { FeedDecoder, readFailure, type EncodingSource, type FeedEncoding } from './lines.ts';
import type { FeedRecord } from './row.ts';
import { FEED_FIELDS, type ColumnMap, type JsonValue } from './types.ts';

/** The keys that are not read as fields; null and "" are left out, as in CSV. */
function toExtras(object: Record<string, unknown>, fieldKeys: ReadonlySet<string>): RecordExtras {
  const entries: [string, JsonValue][] = [];
  for (const [key, value] of Object.entries(object)) {
    if (fieldKeys.has(key) || value === null || value === undefined || value === '') continue;
    entries.push([key, typeof value === 'string' ? value.trim() : (value as JsonValue)]);
  }
  return Object.fromEntries(entries);
}

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

/**
 * Streams a JSON Lines feed (one object per line) into the collector. Bytes that do not
 * decode are a file error, like in CSV: the line they are on may hold any employee.
 */
export async function readJsonlInto(
  path: string,
  file: string,
  settings: { map?: ColumnMap | undefined; encoding?: FeedEncoding | undefined; onBytes?: ((bytesRead: number) => void) | undefined },
  collector: FeedCollector,
): Promise<{ hash: string; lineCount: number; encoding?: FeedEncoding; encodingSource?: EncodingSource }> {
  const { map } = settings;
  const fieldKeys = new Set(FEED_FIELDS.map((field) => columnFor(field, map)));
  const decoder = new FeedDecoder(settings.encoding);
  let pending = '';
  let lineNo = 0;
  const handle = (raw: string): void => {
    lineNo += 1;
    const text = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (text.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      const why = errorMessage(error);
      collector.malformed(lineNo, `not valid JSON (${why}); each line must be one complete JSON object; fix the line in the HR export`, salvageKeys(text, map), 'invalid-json');
      return;
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      collector.malformed(lineNo, 'not a JSON object; each line must be one object such as {"employee_id": "E1", "email": "a@example.com"}', {}, 'invalid-json');
      return;
    }
    const object = value as Record<string, unknown>;
    collector.add(lineNo, toRecord(object, map), toExtras(object, fieldKeys));
  };
  /** Handles every complete line of `text`, keeping the unfinished last one. */
  const take = (text: string): void => {
    pending += text;
    let from = 0;
    for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n', from)) {
      handle(pending.slice(from, nl));
      from = nl + 1;
    }
    pending = pending.slice(from);
  };
  try {
    let bytesRead = 0;
    for await (const chunk of createReadStream(path)) {
      bytesRead += (chunk as Buffer).length;
      settings.onBytes?.(bytesRead);
      take(decoder.write(chunk as Buffer));
    }
    take(decoder.end());
    if (pending !== '') handle(pending);
  } catch (error) {
    collector.fileError(readFailure(file, error));
  }
  const encoding = decoder.detectedEncoding;
  return { hash: decoder.digest(), lineCount: decoder.lineCount, ...(encoding !== undefined ? { encoding, encodingSource: decoder.encodingSource } : {}) };
}
