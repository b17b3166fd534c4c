import { isObject, type JsonObject } from './json.ts';

/**
 * `attributes` and `excludedAttributes` (RFC 7644 §3.4.2.5), on every GET of Users and
 * Groups, listed or by id. Names are case-insensitive and may be a sub-attribute
 * (`name.givenName`) or carry their schema URN (`urn:…:enterprise:2.0:User:department`);
 * `id` and `schemas` are always returned. A value filter written into the list
 * (`emails[type eq "work"]`, as Microsoft's reference collection sends it) is read as its
 * attribute: the list names attributes, not values.
 */

interface Path {
  /** The resource's key, lower case: an attribute, or an extension's URN. */
  top: string;
  /** A sub-attribute, lower case. */
  sub?: string;
}

const ALWAYS = new Set(['id', 'schemas']);
const CORE_URN = /^urn:ietf:params:scim:schemas:core:2\.0:(user|group):/i;

function parsePath(raw: string, extensions: readonly string[]): Path | undefined {
  let text = raw.trim().replace(/\[[^\]]*\]/g, '');
  if (text === '') return undefined;
  text = text.replace(CORE_URN, '');
  const extension = extensions.find((urn) => text.toLowerCase().startsWith(`${urn.toLowerCase()}:`) || text.toLowerCase() === urn.toLowerCase());
  if (extension !== undefined) {
    const rest = text.slice(extension.length + 1);
    return rest === '' ? { top: extension.toLowerCase() } : { top: extension.toLowerCase(), sub: rest.split('.')[0]!.toLowerCase() };
  }
  const [top, sub] = text.split('.');
  return sub === undefined ? { top: top!.toLowerCase() } : { top: top!.toLowerCase(), sub: sub.toLowerCase() };
}

function list(params: URLSearchParams, name: string, extensions: readonly string[]): Path[] | undefined {
  const raw = params.get(name);
  if (raw === null || raw.trim() === '') return undefined;
  return raw.split(',').flatMap((part) => parsePath(part, extensions) ?? []);
}

/** Keeps (or drops) the sub-attributes named, in an object or in each entry of a list. */
function pickSubs(value: unknown, subs: ReadonlySet<string>, keep: boolean): unknown {
  const one = (entry: unknown): unknown => (isObject(entry) ? Object.fromEntries(Object.entries(entry).filter(([k]) => subs.has(k.toLowerCase()) === keep)) : entry);
  return Array.isArray(value) ? value.map(one) : one(value);
}

export interface Projection {
  /** Whether a top-level attribute (lower case) is returned at all: lets a caller skip reading it (a group's members). */
  wants(attribute: string): boolean;
  apply<T extends JsonObject>(resource: T): JsonObject;
}

/** The projection a request asks for; `extensions` are the schema URNs a resource may carry as keys. */
export function projection(params: URLSearchParams, extensions: readonly string[] = []): Projection {
  const included = list(params, 'attributes', extensions);
  const excluded = included === undefined ? list(params, 'excludedAttributes', extensions) : undefined;
  const group = (paths: readonly Path[]): Map<string, Set<string> | 'whole'> => {
    const out = new Map<string, Set<string> | 'whole'>();
    for (const p of paths) {
      const current = out.get(p.top);
      if (p.sub === undefined || current === 'whole') out.set(p.top, 'whole');
      else out.set(p.top, (current ?? new Set<string>()).add(p.sub));
    }
    return out;
  };
  const include = included && group(included);
  const exclude = excluded && group(excluded);
  return {
    wants(attribute) {
      const key = attribute.toLowerCase();
      if (ALWAYS.has(key)) return true;
      if (include) return include.has(key);
      if (exclude) return exclude.get(key) !== 'whole';
      return true;
    },
    apply(resource) {
      if (!include && !exclude) return resource;
      const out: JsonObject = {};
      for (const [key, value] of Object.entries(resource)) {
        const lower = key.toLowerCase();
        if (ALWAYS.has(lower)) {
          out[key] = value;
          continue;
        }
        if (include) {
          const rule = include.get(lower);
          if (rule === 'whole') out[key] = value;
          else if (rule !== undefined) out[key] = pickSubs(value, rule, true);
          continue;
        }
        const rule = exclude!.get(lower);
        if (rule === undefined) out[key] = value;
        else if (rule !== 'whole') out[key] = pickSubs(value, rule, false);
      }
      return out;
    },
  };
}
