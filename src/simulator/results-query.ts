import type { ApiResult, DateBoundsMode, SimulatorState } from './state.ts';
import { findGroup, metaOf } from './state.ts';

/**
 * GET results' filtering, done with binary searches on the date-sorted list so a
 * page costs O(log N + 50) whatever the data size. Lists narrowed by reporting
 * filters are built once per data version and cached.
 */

export interface ResultsQuery {
  startDate?: string | undefined;
  endDate?: string | undefined;
  /** Filter-answer GUIDs or group GUIDs (any match). */
  reportingFilters?: string[] | undefined;
}

export interface ParsedBound {
  t: number;
  /** A bare `YYYY-MM-DD` (midnight UTC). */
  dateOnly: boolean;
}

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
const INSTANT = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2})?)(?:\.(\d+))?(Z|[+-]\d{2}:?\d{2})?$/i;

/**
 * Parses a bound as .NET's DateTimeOffset would: a date means midnight UTC, an
 * instant may carry an offset (none means UTC). A '+' sent unencoded arrives as a
 * space, so " 02:00" at the end is read as "+02:00".
 */
export function parseBound(raw: string): ParsedBound | undefined {
  const value = raw.trim().replace(/ (\d{2}:?\d{2})$/, '+$1');
  const d = DATE_ONLY.exec(value);
  if (d) {
    const t = Date.UTC(Number(d[1]), Number(d[2]) - 1, Number(d[3]));
    const check = new Date(t);
    if (check.getUTCMonth() !== Number(d[2]) - 1 || check.getUTCDate() !== Number(d[3])) return undefined;
    return { t, dateOnly: true };
  }
  const m = INSTANT.exec(value);
  if (!m) return undefined;
  const time = m[2]!.length === 5 ? `${m[2]}:00` : m[2]!;
  const fraction = (m[3] ?? '').slice(0, 3).padEnd(3, '0');
  let zone = (m[4] ?? 'Z').toUpperCase();
  if (zone !== 'Z' && !zone.includes(':')) zone = `${zone.slice(0, 3)}:${zone.slice(3)}`;
  const t = Date.parse(`${m[1]}T${time}.${fraction}${zone}`);
  return Number.isNaN(t) ? undefined : { t, dateOnly: false };
}

/** The half-open range [lo, hi) of epoch-ms keys a query keeps, as comparisons. */
export interface DateRange {
  /** Keep t > lo (exclusive) or t >= lo (inclusive); undefined = no lower bound. */
  lo: number | undefined;
  loInclusive: boolean;
  hi: number | undefined;
  hiInclusive: boolean;
}

/** How startDate/endDate select dateCompleted under each bounds mode. */
export function dateRange(start: ParsedBound | undefined, end: ParsedBound | undefined, mode: DateBoundsMode): DateRange {
  if (mode === 'exclusive-instant') {
    return { lo: start?.t, loInclusive: false, hi: end?.t, hiInclusive: false };
  }
  // inclusive-date: the start day counts from its midnight; an end date covers its whole day.
  if (end?.dateOnly) return { lo: start?.t, loInclusive: true, hi: end.t + 86_400_000, hiInclusive: false };
  return { lo: start?.t, loInclusive: true, hi: end?.t, hiInclusive: true };
}

/** Whether an epoch-ms instant lies in the range. */
export function inRange(range: DateRange, t: number): boolean {
  if (range.lo !== undefined && (range.loInclusive ? t < range.lo : t <= range.lo)) return false;
  if (range.hi !== undefined && (range.hiInclusive ? t > range.hi : t >= range.hi)) return false;
  return true;
}

/** First index whose t is > x (strict) or >= x. */
function searchT(state: SimulatorState, list: ApiResult[], x: number, strict: boolean): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const t = metaOf(state, list[mid]!).t!;
    if (strict ? t <= x : t < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

interface FilteredLists {
  dated: ApiResult[];
  undated: ApiResult[];
}

const filterCache = new WeakMap<SimulatorState, { version: number; lists: Map<string, FilteredLists> }>();

function filteredLists(state: SimulatorState, ids: string[]): FilteredLists {
  if (ids.length === 0) return { dated: state.results, undated: state.undatedResults };
  const key = [...new Set(ids)].sort().join(',');
  let cache = filterCache.get(state);
  if (!cache || cache.version !== state.version) {
    cache = { version: state.version, lists: new Map() };
    filterCache.set(state, cache);
  }
  const hit = cache.lists.get(key);
  if (hit) return hit;
  const answers = new Set<string>();
  const members = new Set<string>();
  for (const id of ids) {
    const group = findGroup(state, id);
    if (group) for (const m of group.memberIds) members.add(m);
    else answers.add(id);
  }
  const keep = (r: ApiResult): boolean => members.has(r.userId) || r.resultFilters.some((a) => answers.has(a));
  const lists = { dated: state.results.filter(keep), undated: state.undatedResults.filter(keep) };
  if (cache.lists.size >= 64) cache.lists.clear();
  cache.lists.set(key, lists);
  return lists;
}

export interface ResultsSelection {
  total: number;
  /** How many of the selection are dated: they come first, oldest first. */
  dated: number;
  /** Returns the items at [from, to) of the selection, in listing order. */
  slice(from: number, to: number): ApiResult[];
}

/**
 * The results a query selects, in the listing order: dated by (dateCompleted, id),
 * then — only when neither bound is given — the undated ones by id.
 */
export function selectResults(state: SimulatorState, range: DateRange, reportingFilters: string[]): ResultsSelection {
  const lists = filteredLists(state, reportingFilters.map((id) => id.toLowerCase()));
  const bounded = range.lo !== undefined || range.hi !== undefined;
  const a = range.lo === undefined ? 0 : searchT(state, lists.dated, range.lo, !range.loInclusive);
  const b = range.hi === undefined ? lists.dated.length : searchT(state, lists.dated, range.hi, range.hiInclusive);
  const datedCount = Math.max(0, b - a);
  const undated = bounded ? [] : lists.undated;
  return {
    total: datedCount + undated.length,
    dated: datedCount,
    slice(from, to) {
      const out: ApiResult[] = [];
      for (let i = from; i < to && i < datedCount + undated.length; i++) {
        out.push(i < datedCount ? lists.dated[a + i]! : undated[i - datedCount]!);
      }
      return out;
    },
  };
}

/**
 * Every result a GET results query would list over all its pages, in order — for
 * tests that compare the warehouse with what the platform holds.
 */
export function queryResults(state: SimulatorState, query: ResultsQuery = {}): ApiResult[] {
  const start = query.startDate === undefined ? undefined : parseBound(query.startDate);
  const end = query.endDate === undefined ? undefined : parseBound(query.endDate);
  if ((query.startDate !== undefined && !start) || (query.endDate !== undefined && !end)) throw new Error('unreadable date bound');
  const selection = selectResults(state, dateRange(start, end, state.dateBounds), query.reportingFilters ?? []);
  return selection.slice(0, selection.total);
}
