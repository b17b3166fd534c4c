import { badRequest } from './errors.ts';

/**
 * What a SCIM body may hold before anything reads it: Postgres's jsonb refuses a NUL
 * (\u0000) and a lone UTF-16 surrogate (\ud800 alone), and a deep nesting costs every
 * recursive reader (the PATCH library, JSON.stringify) its stack. Refused at the door, 400,
 * naming where: a value the store cannot keep must never be answered 2xx, nor fail the
 * other Users written in the same batch.
 */

/** Levels of objects and arrays a body may nest (a SCIM User or PatchOp needs six at most). */
export const MAX_JSON_DEPTH = 16;

// A high surrogate not followed by a low one, or a low one not preceded by a high one.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why a text cannot be stored, or undefined when it can. */
export function textFault(text: string): string | undefined {
  if (text.includes('\u0000')) return 'contains a NUL character (\\u0000)';
  if (LONE_SURROGATE.test(text)) return 'contains a lone UTF-16 surrogate (not Unicode text)';
  return undefined;
}

const where = (path: readonly (string | number)[]): string => (path.length === 0 ? 'the body' : path.map(String).join('.'));

/**
 * Walks a parsed body without recursion: 400 invalidSyntax past MAX_JSON_DEPTH, 400
 * invalidValue for a key or a text that cannot be stored (the attribute named, never its value).
 */
export function checkJsonLimits(value: unknown): void {
  const stack: Array<{ value: unknown; path: (string | number)[] }> = [{ value, path: [] }];
  while (stack.length > 0) {
    const { value: item, path } = stack.pop()!;
    if (typeof item === 'string') {
      const fault = textFault(item);
      if (fault) throw badRequest(`${where(path)}: the value ${fault}`, 'invalidValue');
      continue;
    }
    if (item === null || typeof item !== 'object') continue;
    if (path.length >= MAX_JSON_DEPTH) throw badRequest(`${where(path)}: nested deeper than ${MAX_JSON_DEPTH} levels of objects and arrays`, 'invalidSyntax');
    const entries: Array<[string | number, unknown]> = Array.isArray(item) ? item.map((v, i) => [i, v]) : Object.entries(item);
    for (const [key, child] of entries) {
      if (typeof key === 'string') {
        const fault = textFault(key);
        if (fault) throw badRequest(`${where(path)}: an attribute name ${fault}`, 'invalidValue');
      }
      stack.push({ value: child, path: [...path, key] });
    }
  }
}
