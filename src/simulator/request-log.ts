/** One request the simulator received (admin calls under /__simulator are not recorded). */
export interface RequestRecord {
  /** performance.timeOrigin + performance.now(), in ms, taken on arrival. */
  at: number;
  method: string;
  path: string;
  /** The raw query string without '?', '' when none. */
  query: string;
  /** Filled in when the response is sent (0 until then). */
  status: number;
  authorized: boolean;
  /** The GUID of the organisation whose key authorised the request; absent when none did. */
  organisationId?: string;
  /** The raw Authorization header, for tests that check the key never leaks elsewhere. */
  authorization?: string;
  /** The route template, e.g. 'GET /api/v2/groups/{groupId}/users/{userId}'. */
  route: string;
}

/** Kept requests; older ones are dropped in chunks so pushing stays O(1) amortised. */
export const MAX_RECORDS = 200_000;

export function pushRecord(records: RequestRecord[], record: RequestRecord): void {
  records.push(record);
  if (records.length > MAX_RECORDS + 10_000) records.splice(0, records.length - MAX_RECORDS);
}

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** How many write calls (POST, PUT, PATCH, DELETE) reached the API, log-in POSTs included. */
export function writeCallCount(requests: readonly RequestRecord[], options: { includeLogin?: boolean } = {}): number {
  const includeLogin = options.includeLogin ?? true;
  let n = 0;
  for (const r of requests) {
    if (!WRITES.has(r.method) || !r.path.toLowerCase().startsWith('/api/v2/')) continue;
    if (!includeLogin && /^\/api\/v2\/login(\/|$)/i.test(r.path)) continue;
    n++;
  }
  return n;
}

/** The largest number of requests whose arrival times fall within any window of `windowMs`. */
export function maxInWindow(requests: readonly RequestRecord[], windowMs = 1000): number {
  let best = 0;
  let lo = 0;
  for (let hi = 0; hi < requests.length; hi++) {
    while (requests[hi]!.at - requests[lo]!.at >= windowMs) lo++;
    best = Math.max(best, hi - lo + 1);
  }
  return best;
}

export interface RequestsSummary {
  total: number;
  /** Counts by 'METHOD /path/template'. */
  byRoute: Record<string, number>;
  /** Counts by HTTP status. */
  byStatus: Record<string, number>;
  writeCalls: number;
  unauthorized: number;
  /** Most requests that arrived within any sliding window of windowMs. */
  maxInAnyWindow: number;
  windowMs: number;
  firstAt: number | null;
  lastAt: number | null;
}

export function summariseRequests(requests: readonly RequestRecord[], windowMs = 1000): RequestsSummary {
  const byRoute: Record<string, number> = {};
  const byStatus: Record<string, number> = {};
  let unauthorized = 0;
  for (const r of requests) {
    byRoute[r.route] = (byRoute[r.route] ?? 0) + 1;
    byStatus[String(r.status)] = (byStatus[String(r.status)] ?? 0) + 1;
    if (!r.authorized) unauthorized++;
  }
  return {
    total: requests.length,
    byRoute,
    byStatus,
    writeCalls: writeCallCount(requests),
    unauthorized,
    maxInAnyWindow: maxInWindow(requests, windowMs),
    windowMs,
    firstAt: requests[0]?.at ?? null,
    lastAt: requests[requests.length - 1]?.at ?? null,
  };
}

/** One organisation's (one key's) traffic: a budget per key is checked against these. */
export interface OrganisationRequests {
  total: number;
  /** Most requests that arrived within any sliding window of windowMs. */
  maxInAnyWindow: number;
  /** Most requests that arrived within one whole clock second (epoch second). */
  maxInAnyClockSecond: number;
  /** Requests per clock second, keyed by the epoch second, in order. */
  perSecond: Record<string, number>;
  firstAt: number | null;
  lastAt: number | null;
}

/**
 * The authorised requests of each organisation (keyed by its GUID): a bench shows "no
 * key over its budget in any second" from these. Records arrive in time order, so
 * each organisation's slice is sorted too.
 */
export function requestsByOrganisation(requests: readonly RequestRecord[], windowMs = 1000): Record<string, OrganisationRequests> {
  const byOrg = new Map<string, RequestRecord[]>();
  for (const r of requests) {
    if (r.organisationId === undefined) continue;
    let list = byOrg.get(r.organisationId);
    if (!list) byOrg.set(r.organisationId, (list = []));
    list.push(r);
  }
  const out: Record<string, OrganisationRequests> = {};
  for (const [organisationId, list] of byOrg) {
    const perSecond: Record<string, number> = {};
    let maxInAnyClockSecond = 0;
    for (const r of list) {
      const second = String(Math.floor(r.at / 1000));
      const n = (perSecond[second] ?? 0) + 1;
      perSecond[second] = n;
      if (n > maxInAnyClockSecond) maxInAnyClockSecond = n;
    }
    out[organisationId] = {
      total: list.length,
      maxInAnyWindow: maxInWindow(list, windowMs),
      maxInAnyClockSecond,
      perSecond,
      firstAt: list[0]?.at ?? null,
      lastAt: list[list.length - 1]?.at ?? null,
    };
  }
  return out;
}

/** One key's arrivals judged against a limit per window (see `keyArrivalFigures`). */
export interface KeyArrivalFigures {
  total: number;
  /** Most arrivals within any sliding window of windowMs (half-open: [t, t + windowMs)). */
  maxInAnyWindow: number;
  /** Most arrivals within one clock second (epoch second). */
  maxInAnyClockSecond: number;
  /** Sliding windows holding more than `limit` (overlapping ones counted once); 0 without a limit. */
  windowsOverLimit: number;
  /** The least time spanned by limit + 1 arrivals in a row, ms: under windowMs is a window over the limit. Null without a limit or with too few. */
  tightestSpanMs: number | null;
}

/** Pure: the figures of one key's arrival times (sorted, ms). */
export function keyArrivalFigures(times: readonly number[], windowMs: number, limit?: number): KeyArrivalFigures {
  let maxInAnyWindow = 0;
  let windowsOverLimit = 0;
  let overUntil = -1;
  for (let hi = 0, lo = 0; hi < times.length; hi++) {
    while (times[hi]! - times[lo]! >= windowMs) lo++;
    const n = hi - lo + 1;
    if (n > maxInAnyWindow) maxInAnyWindow = n;
    if (limit !== undefined && n > limit) {
      // One window per run of overlapping windows over the limit.
      if (lo > overUntil) windowsOverLimit += 1;
      overUntil = hi;
    }
  }
  let maxInAnyClockSecond = 0;
  for (let i = 0, run = 0; i < times.length; i++) {
    run = i > 0 && Math.floor(times[i]! / 1000) === Math.floor(times[i - 1]! / 1000) ? run + 1 : 1;
    if (run > maxInAnyClockSecond) maxInAnyClockSecond = run;
  }
  let tightest = Number.POSITIVE_INFINITY;
  if (limit !== undefined) for (let i = limit; i < times.length; i++) tightest = Math.min(tightest, times[i]! - times[i - limit]!);
  return { total: times.length, maxInAnyWindow, maxInAnyClockSecond, windowsOverLimit, tightestSpanMs: Number.isFinite(tightest) ? Math.round(tightest * 10) / 10 : null };
}

/**
 * Every authorised request's arrival time, per key (its organisation's GUID), never trimmed:
 * the request log keeps the last 200,000 records, too few to judge every key of a long run
 * with many organisations. Eight bytes a request. Arrivals are stamped in order, so each
 * key's list stays sorted.
 */
export class KeyArrivals {
  private readonly byKey = new Map<string, number[]>();

  add(organisationId: string, at: number): void {
    let list = this.byKey.get(organisationId);
    if (!list) this.byKey.set(organisationId, (list = []));
    list.push(at);
  }

  clear(): void {
    this.byKey.clear();
  }

  figures(organisationId: string, windowMs: number, limit?: number): KeyArrivalFigures {
    return keyArrivalFigures(this.byKey.get(organisationId) ?? [], windowMs, limit);
  }
}
