import { parse, type Filter } from 'scim2-parse-filter';
import { badRequest } from './errors.ts';
import { textFault } from './json-limits.ts';

/**
 * `filter=` as the identity providers send it: equality on one of a few attributes,
 * joined by `and` (Okta: `userName eq "…"`; Entra: `userName eq "…"`, `externalId eq
 * "…"`, `displayName eq "…"` for groups). Parsed by scim2-parse-filter; anything else is
 * refused with 400 invalidFilter, never read as "everything".
 */

export interface Equality {
  /** The attribute as this service names it (canonical case). */
  attribute: string;
  value: string;
}

function equalities(ast: Filter, allowed: ReadonlyMap<string, string>, out: Equality[]): void {
  if (ast.op === 'and' && 'filters' in ast) {
    for (const f of ast.filters) equalities(f, allowed, out);
    return;
  }
  if (ast.op === 'eq' && 'attrPath' in ast && 'compValue' in ast) {
    const attribute = allowed.get(ast.attrPath.toLowerCase());
    if (attribute === undefined) throw badRequest(`filter on "${ast.attrPath}" is not supported; supported: ${[...allowed.values()].join(', ')} with eq, joined by and`, 'invalidFilter');
    if (typeof ast.compValue !== 'string' && typeof ast.compValue !== 'number') throw badRequest(`filter ${ast.attrPath} eq: expected a quoted value`, 'invalidFilter');
    const value = String(ast.compValue);
    // The store cannot compare a NUL or a lone surrogate: refused here rather than failing the query.
    const fault = textFault(value);
    if (fault !== undefined) throw badRequest(`filter ${ast.attrPath} eq: the value ${fault}`, 'invalidFilter');
    out.push({ attribute, value });
    return;
  }
  throw badRequest(`filter operator "${ast.op}" is not supported; supported: eq, joined by and`, 'invalidFilter');
}

/** The equalities of a filter (empty when none is given); `attributes` are the filterable ones. */
export function parseFilter(text: string | null, attributes: readonly string[]): Equality[] {
  if (text === null || text.trim() === '') return [];
  const fault = textFault(text);
  if (fault !== undefined) throw badRequest(`filter: the text ${fault}`, 'invalidFilter');
  let ast: Filter;
  try {
    ast = parse(text);
  } catch (error) {
    throw badRequest(`filter ${JSON.stringify(text)} cannot be read (${(error as Error).message}); e.g. userName eq "ann@example.com"`, 'invalidFilter');
  }
  const out: Equality[] = [];
  equalities(ast, new Map(attributes.map((a) => [a.toLowerCase(), a])), out);
  return out;
}

export interface Page {
  /** 1-based. */
  startIndex: number;
  count: number;
}

/**
 * startIndex (default 1, below 1 read as 1) and count (default and ceiling `max`, below 0 read
 * as 0), as RFC 7644 §3.4.2.4 says; a startIndex past any list (beyond 2^53) is read as the
 * largest exact one, an empty page, never an offset the database refuses. Not a whole number: 400.
 */
export function parsePage(params: URLSearchParams, max: number): Page {
  const number = (name: string): number | undefined => {
    const raw = params.get(name);
    if (raw === null || raw === '') return undefined;
    if (!/^-?\d+$/.test(raw)) throw badRequest(`${name}: expected a whole number, got ${JSON.stringify(raw)}`, 'invalidValue');
    return Number(raw);
  };
  return { startIndex: Math.min(Number.MAX_SAFE_INTEGER, Math.max(1, number('startIndex') ?? 1)), count: Math.min(max, Math.max(0, number('count') ?? max)) };
}
