import { once } from 'node:events';
import type { FileHandle } from 'node:fs/promises';

/**
 * JSON text written piece by piece: the same text as `JSON.stringify(value, null, indent)`,
 * without ever holding it whole. A plan of 875,000 actions is some 700 MB of indented JSON
 * (its actions, then each employee's again), past what a string may hold; written this
 * way the command holds one action's text at a time.
 *
 * A value streams when it says how: `[JSON_ITEMS]()` (it is an array in JSON; its toJSON
 * must give the same items) or `[JSON_ENTRIES]()` (an object: [key, value] pairs, in the
 * order JSON.stringify lists its toJSON's keys). Each item is written by JSON.stringify, so
 * items are small values. Plain objects on the way to such a value are walked; everything
 * else (arrays, strings, numbers, objects with their own toJSON, class instances) is
 * written by JSON.stringify itself, so the text never differs from it.
 */
export const JSON_ITEMS = Symbol('trainsync.jsonItems');
export const JSON_ENTRIES = Symbol('trainsync.jsonEntries');

export interface JsonItems {
  [JSON_ITEMS](): Iterable<unknown>;
}
export interface JsonEntries {
  [JSON_ENTRIES](): Iterable<readonly [string, unknown]>;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return (proto === Object.prototype || proto === null) && typeof (value as { toJSON?: unknown }).toJSON !== 'function';
}

/** `JSON.stringify(value, null, indent)` of a value at depth `pad`: every line after the first indented by it. */
function stringifyAt(value: unknown, key: string, indent: number, pad: string): string | undefined {
  // The holder object makes JSON.stringify pass `key` to a toJSON, as it would in place.
  const text = JSON.stringify({ [key]: value }, null, indent);
  if (text === '{}') return undefined;
  const name = JSON.stringify(key).length;
  if (indent === 0) return text.slice(name + 2, -1); // `{"key":<value>}`
  // `{\n<one>"key": <value>\n}`: the value's lines after its first are one level in; re-indent them to `pad`.
  const one = ' '.repeat(indent);
  return text.slice(2 + indent + name + 2, -2).split(`\n${one}`).join(`\n${pad}`);
}

function* chunksAt(value: unknown, key: string, indent: number, pad: string): Generator<string, boolean> {
  const inner = pad + ' '.repeat(indent);
  const newline = indent > 0 ? `\n` : '';
  const colon = indent > 0 ? ': ' : ':';
  if (typeof value === 'object' && value !== null && JSON_ITEMS in value) {
    let index = 0;
    for (const item of (value as JsonItems)[JSON_ITEMS]()) {
      yield `${index === 0 ? '[' : ','}${newline}${inner}${stringifyAt(item, String(index), indent, inner) ?? 'null'}`;
      index += 1;
    }
    yield index === 0 ? '[]' : `${newline}${pad}]`;
    return true;
  }
  if (typeof value === 'object' && value !== null && JSON_ENTRIES in value) {
    let first = true;
    for (const [k, v] of (value as JsonEntries)[JSON_ENTRIES]()) {
      const text = stringifyAt(v, k, indent, inner);
      if (text === undefined) continue;
      yield `${first ? '{' : ','}${newline}${inner}${JSON.stringify(k)}${colon}${text}`;
      first = false;
    }
    yield first ? '{}' : `${newline}${pad}}`;
    return true;
  }
  if (isPlainObject(value)) {
    let first = true;
    for (const k of Object.keys(value)) {
      const v = value[k];
      if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
      yield `${first ? '{' : ','}${newline}${inner}${JSON.stringify(k)}${colon}`;
      first = false;
      yield* chunksAt(v, k, indent, inner);
    }
    yield first ? '{}' : `${newline}${pad}}`;
    return true;
  }
  const text = stringifyAt(value, key, indent, pad);
  if (text === undefined) return false;
  yield text;
  return true;
}

/** The pieces of `JSON.stringify(value, null, indent)` (see the module comment); none for a value JSON leaves out. */
export function* jsonChunks(value: unknown, indent = 2): Generator<string> {
  yield* chunksAt(value, '', indent, '');
}

/** Gathers pieces into writes of about 64 KiB. */
async function batched(chunks: Iterable<string>, write: (text: string) => Promise<void>): Promise<void> {
  let buffer = '';
  for (const chunk of chunks) {
    buffer += chunk;
    if (buffer.length < 65_536) continue;
    await write(buffer);
    buffer = '';
  }
  if (buffer !== '') await write(buffer);
}

/** Writes pieces of text to a stream (stdout), waiting whenever it asks to. */
export async function writeChunks(stream: NodeJS.WritableStream, chunks: Iterable<string>): Promise<void> {
  await batched(chunks, async (text) => {
    if (!stream.write(text)) await once(stream, 'drain');
  });
}

/** Writes pieces of text to an open file, in order. */
export async function writeChunksToFile(handle: FileHandle, chunks: Iterable<string>): Promise<void> {
  await batched(chunks, async (text) => {
    await handle.write(text);
  });
}
