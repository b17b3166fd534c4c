/**
 * Per key, the most requests in any sliding second three ways (bench only):
 * - "simulator stamp": when the simulator's event loop handled the request (its request log);
 * - "capture": when the request's first byte reached the loopback device (arrivals-capture.ts),
 *   independent of any event loop: what the platform received;
 * - "grant": the time the Redis grant log gave the request (its score, Redis clock), polled
 *   from Redis while the run goes: what the limiter allowed.
 * Requests are matched simulator ↔ capture by key, method and target, in order, so the
 * simulator's stamp minus the capture time (how late the simulator stamps) is known per request.
 */
import { Redis } from 'ioredis';

export interface Arrival {
  /** Which budget (an organisation's slug). */
  key: string;
  at: number;
  method: string;
  target: string;
  /** Captured only: the first request on its TCP connection. */
  firstOnConnection?: boolean;
  /** Captured only, when known: the sending process. */
  pid?: number;
}

/** The most times of a sorted list within any window of `windowMs` (half-open: [t, t + windowMs)). */
export function maxInSlidingWindow(sorted: readonly number[], windowMs = 1000): number {
  let best = 0;
  for (let hi = 0, lo = 0; hi < sorted.length; hi++) {
    while (sorted[hi]! - sorted[lo]! >= windowMs) lo++;
    best = Math.max(best, hi - lo + 1);
  }
  return best;
}

function maxInClockSecond(sorted: readonly number[]): number {
  const perSecond = new Map<number, number>();
  for (const t of sorted) perSecond.set(Math.floor(t / 1000), (perSecond.get(Math.floor(t / 1000)) ?? 0) + 1);
  let best = 0;
  for (const n of perSecond.values()) best = Math.max(best, n);
  return best;
}

/** Each window (by its first index) holding more than `limit`, as [lo, hi] index pairs, overlapping ones merged to the largest. */
function windowsOver(sorted: readonly number[], limit: number, windowMs = 1000): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (let hi = 0, lo = 0; hi < sorted.length; hi++) {
    while (sorted[hi]! - sorted[lo]! >= windowMs) lo++;
    if (hi - lo + 1 > limit) {
      const last = out.at(-1);
      if (last && last[0] === lo) last[1] = hi;
      else if (last && lo <= last[1]) continue;
      else out.push([lo, hi]);
    }
  }
  return out;
}

const round = (value: number, digits = 1): number => Number(value.toFixed(digits));
const pct = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;

export interface Distribution {
  n: number;
  min: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
  over10: number;
  over50: number;
}

function distribution(values: number[]): Distribution | undefined {
  if (values.length === 0) return undefined;
  const d = [...values].sort((a, b) => a - b);
  return {
    n: d.length,
    min: round(d[0]!, 2),
    p50: round(pct(d, 50), 2),
    p90: round(pct(d, 90), 2),
    p99: round(pct(d, 99), 2),
    p999: round(pct(d, 99.9), 2),
    max: round(d.at(-1)!, 2),
    over10: d.filter((x) => x > 10).length,
    over50: d.filter((x) => x > 50).length,
  };
}

export interface WayFigures {
  /** Most requests of one key in any sliding second. */
  maxPerKey: number;
  worstKey: string | null;
  maxPerKeyInClockSecond: number;
  /** Sliding seconds (merged where they overlap) holding more than the budget, over all keys. */
  windowsOverBudget: number;
  /** The shortest gap between two requests (or grants) of one key, ms. */
  minGapMs: number | null;
  /**
   * The shortest time spanned by budget + 1 consecutive requests (or grants) of one key, ms:
   * ≥ 1000 means no sliding second held more than the budget, and by how much it did not.
   */
  tightestSpanMs: number | null;
}

export interface PerKeyComparison {
  budget: number;
  simulator: WayFigures;
  capture?: WayFigures & {
    requests: number;
    unmatchedCaptured: number;
    unmatchedSimulator: number;
    /** Of the unmatched simulator records, those stamped after the last captured request (sent after the capture stopped). */
    unmatchedSimulatorAfterCapture: number;
  };
  grants?: WayFigures & { grants: number };
  /** Simulator stamp − capture time over every matched request, ms. */
  stampDelayMs?: Distribution;
  /** Capture time − the latest grant of the same key at or before it (a request's time from its grant to the wire), ms. */
  sinceGrantMs?: Distribution;
  /**
   * Up to five sliding seconds over the budget by the simulator's stamp: the key, the
   * requests' capture-time gaps and stamp delays, and how many of them one capture second holds.
   */
  simulatorOverBudget?: Array<{ key: string; count: number; captureCount: number; captureGapsMs: number[]; stampDelaysMs: number[] }>;
  /** The same for seconds over the budget by capture time, with each request's capture − grant time when known. */
  captureOverBudget?: Array<{ key: string; count: number; captureGapsMs: number[]; sinceGrantMs: Array<number | null> }>;
  /**
   * The budget + 1 captured requests in a row of one key that span the least time: their
   * gaps, each one's capture − grant, and which were the first on a new connection.
   */
  tightestCaptured?: { key: string; spanMs: number; captureGapsMs: number[]; sinceGrantMs: Array<number | null>; newConnection: boolean[]; pids: Array<number | null> };
}

function figures(byKey: Map<string, number[]>, budget: number): WayFigures {
  let maxPerKey = 0;
  let worstKey: string | null = null;
  let clock = 0;
  let over = 0;
  let minGap = Number.POSITIVE_INFINITY;
  let tightest = Number.POSITIVE_INFINITY;
  for (const [key, times] of byKey) {
    for (let i = 1; i < times.length; i++) minGap = Math.min(minGap, times[i]! - times[i - 1]!);
    for (let i = budget; i < times.length; i++) tightest = Math.min(tightest, times[i]! - times[i - budget]!);
    const m = maxInSlidingWindow(times);
    if (m > maxPerKey) {
      maxPerKey = m;
      worstKey = key;
    }
    clock = Math.max(clock, maxInClockSecond(times));
    over += windowsOver(times, budget).length;
  }
  return { maxPerKey, worstKey, maxPerKeyInClockSecond: clock, windowsOverBudget: over, minGapMs: Number.isFinite(minGap) ? round(minGap, 2) : null, tightestSpanMs: Number.isFinite(tightest) ? round(tightest, 1) : null };
}

function group<T extends { key: string; at: number }>(items: readonly T[]): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    let list = out.get(item.key);
    if (!list) out.set(item.key, (list = []));
    list.push(item);
  }
  for (const list of out.values()) list.sort((a, b) => a.at - b.at);
  return out;
}

const times = <T extends { at: number }>(m: Map<string, T[]>): Map<string, number[]> => new Map([...m].map(([k, v]) => [k, v.map((x) => x.at)]));

export function comparePerKey(input: { budget: number; simulator: readonly Arrival[]; captured?: readonly Arrival[]; grants?: ReadonlyMap<string, number[]> }): PerKeyComparison {
  const { budget } = input;
  const sim = group(input.simulator);
  const out: PerKeyComparison = { budget, simulator: figures(times(sim), budget) };
  if (input.grants) {
    const sorted = new Map([...input.grants].map(([k, v]) => [k, [...v].sort((a, b) => a - b)]));
    out.grants = { ...figures(sorted, budget), grants: [...sorted.values()].reduce((s, v) => s + v.length, 0) };
  }
  if (!input.captured) return out;
  const cap = group(input.captured);
  // Matching: each simulator record takes the earliest unmatched capture of the same key, method and target.
  const delays: number[] = [];
  const delayOf = new Map<Arrival, number>();
  const captureOf = new Map<Arrival, Arrival>();
  let unmatchedSimulator = 0;
  let unmatchedAfter = 0;
  let matched = 0;
  const lastCaptured = input.captured.reduce((m, c) => Math.max(m, c.at), Number.NEGATIVE_INFINITY);
  for (const [key, records] of sim) {
    const queues = new Map<string, Arrival[]>();
    for (const c of cap.get(key) ?? []) {
      const id = `${c.method} ${c.target}`;
      let q = queues.get(id);
      if (!q) queues.set(id, (q = []));
      q.push(c);
    }
    for (const r of records) {
      const c = queues.get(`${r.method} ${r.target}`)?.shift();
      if (!c) {
        unmatchedSimulator += 1;
        if (r.at > lastCaptured) unmatchedAfter += 1;
        continue;
      }
      matched += 1;
      delays.push(r.at - c.at);
      delayOf.set(r, r.at - c.at);
      captureOf.set(r, c);
    }
  }
  const captureTimes = times(cap);
  out.capture = { ...figures(captureTimes, budget), requests: input.captured.length, unmatchedCaptured: input.captured.length - matched, unmatchedSimulator, unmatchedSimulatorAfterCapture: unmatchedAfter };
  const stampDelay = distribution(delays);
  if (stampDelay) out.stampDelayMs = stampDelay;
  if (out.grants && input.grants) {
    const since: number[] = [];
    for (const [key, list] of captureTimes) {
      const grants = [...(input.grants.get(key) ?? [])].sort((a, b) => a - b);
      // 1 ms of slack: Redis and the capture read the same wall clock, at different resolutions.
      for (let i = 0, g = -1; i < list.length; i++) {
        while (g + 1 < grants.length && grants[g + 1]! <= list[i]! + 1) g++;
        if (g >= 0) since.push(list[i]! - grants[g]!);
      }
    }
    const d = distribution(since);
    if (d) out.sinceGrantMs = d;
  }
  out.simulatorOverBudget = [];
  for (const [key, records] of sim) {
    const t = records.map((r) => r.at);
    for (const [lo, hi] of windowsOver(t, budget)) {
      if (out.simulatorOverBudget.length >= 5) break;
      const inWindow = records.slice(lo, hi + 1);
      const caps = inWindow.map((r) => captureOf.get(r)?.at).filter((x): x is number => x !== undefined).sort((a, b) => a - b);
      out.simulatorOverBudget.push({
        key,
        count: inWindow.length,
        captureCount: maxInSlidingWindow(caps),
        captureGapsMs: caps.slice(1).map((c, i) => round(c - caps[i]!)),
        stampDelaysMs: inWindow.map((r) => round(delayOf.get(r) ?? Number.NaN)),
      });
    }
  }
  let tight: { key: string; lo: number; span: number } | undefined;
  for (const [key, list] of cap) {
    for (let i = budget; i < list.length; i++) {
      const span = list[i]!.at - list[i - budget]!.at;
      if (tight === undefined || span < tight.span) tight = { key, lo: i - budget, span };
    }
  }
  if (tight) {
    const inWindow = cap.get(tight.key)!.slice(tight.lo, tight.lo + budget + 1);
    const grants = input.grants?.get(tight.key) ? [...input.grants.get(tight.key)!].sort((a, b) => a - b) : undefined;
    out.tightestCaptured = {
      key: tight.key,
      spanMs: round(tight.span),
      captureGapsMs: inWindow.slice(1).map((c, i) => round(c.at - inWindow[i]!.at)),
      sinceGrantMs: inWindow.map((c) => {
        if (!grants) return null;
        let g: number | undefined;
        for (const x of grants) if (x <= c.at + 1) g = x;
        return g === undefined ? null : round(c.at - g);
      }),
      newConnection: inWindow.map((c) => c.firstOnConnection === true),
      pids: inWindow.map((c) => c.pid ?? null),
    };
  }
  out.captureOverBudget = [];
  for (const [key, list] of captureTimes) {
    const grants = input.grants?.get(key) ? [...input.grants.get(key)!].sort((a, b) => a - b) : undefined;
    for (const [lo, hi] of windowsOver(list, budget)) {
      if (out.captureOverBudget.length >= 5) break;
      const inWindow = list.slice(lo, hi + 1);
      out.captureOverBudget.push({
        key,
        count: inWindow.length,
        captureGapsMs: inWindow.slice(1).map((c, i) => round(c - inWindow[i]!)),
        // The latest grant at or before each capture (grants and captures share the wall clock of one machine).
        sinceGrantMs: inWindow.map((c) => {
          if (!grants) return null;
          let g: number | undefined;
          for (const x of grants) if (x <= c + 1) g = x;
          return g === undefined ? null : round(c - g);
        }),
      });
    }
  }
  return out;
}

/** One line for a bench's output: the three ways side by side. */
export function describeComparison(c: PerKeyComparison): string {
  const parts = [`simulator stamp: at most ${c.simulator.maxPerKey} per key in any sliding second (${c.simulator.worstKey}), ${c.simulator.maxPerKeyInClockSecond} in any clock second`];
  if (c.capture) {
    parts.push(
      `capture (kernel time on loopback): at most ${c.capture.maxPerKey} (${c.capture.worstKey}), ${c.capture.maxPerKeyInClockSecond} in any clock second, ` +
        `${c.capture.requests} requests captured, ${c.capture.unmatchedCaptured}/${c.capture.unmatchedSimulator} unmatched (capture/simulator; ${c.capture.unmatchedSimulatorAfterCapture} of these after the capture stopped)`,
    );
  }
  if (c.grants) parts.push(`Redis grant log: at most ${c.grants.maxPerKey} grants (${c.grants.worstKey}) of ${c.grants.grants}`);
  if (c.stampDelayMs) {
    const d = c.stampDelayMs;
    parts.push(`simulator stamp − capture: p50 ${d.p50}, p90 ${d.p90}, p99 ${d.p99}, p99.9 ${d.p999}, max ${d.max} ms (${d.over10} over 10 ms, ${d.over50} over 50 ms)`);
  }
  if (c.sinceGrantMs) {
    const d = c.sinceGrantMs;
    parts.push(`capture − grant: p50 ${d.p50}, p99 ${d.p99}, max ${d.max} ms`);
  }
  const way = (name: string, f: WayFigures | undefined): string => (f ? `${name} ${f.minGapMs ?? '—'} / ${f.tightestSpanMs ?? '—'}` : '');
  parts.push(
    `shortest gap / shortest span of ${c.budget + 1} in a row, per key (ms; a span under 1000 is a second over the budget): ` +
      [way('capture', c.capture), way('grants', c.grants), way('simulator stamp', c.simulator)].filter((x) => x !== '').join(', '),
  );
  if (c.tightestCaptured) {
    const t = c.tightestCaptured;
    parts.push(
      `tightest ${c.budget + 1} captured (${t.key}, ${t.spanMs} ms): gaps ${t.captureGapsMs.join(' ')}; capture − grant ${t.sinceGrantMs.map((x) => x ?? '?').join(' ')}` +
        `${t.newConnection.some(Boolean) ? `; first on a new connection: #${t.newConnection.flatMap((n, i) => (n ? [i + 1] : [])).join(', #')}` : ''}` +
        `; sent by pid ${t.pids.map((x) => x ?? '?').join(' ')}`,
    );
  }
  return parts.join('; ');
}

const READ_LOGS_LUA = `
local out = {}
for i, key in ipairs(KEYS) do out[i] = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES') end
return out`;

/**
 * Polls the grant logs (sorted sets, Redis time in µs as the score) often enough that
 * no grant is missed: a grant stays in its log at least one window (1,050 ms at 10/s) after
 * its score. `keys` maps each Redis key to the budget's name.
 */
export function watchGrants(redisUrl: string, keys: ReadonlyMap<string, string>, everyMs = 25): { stop(): Promise<Map<string, number[]>> } {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  const seen = new Map<string, Map<string, number>>();
  for (const name of keys.values()) seen.set(name, new Map());
  let running = true;
  const loop = (async (): Promise<void> => {
    const list = [...keys];
    while (running) {
      // Every log in one call: one command for Redis and one reply to parse, however many keys
      // (a pipeline of 1,000 ZRANGEs took long enough on a busy machine to miss grants).
      const replies = await redis.eval(READ_LOGS_LUA, list.length, ...list.map(([key]) => key)).catch(() => []);
      (replies as unknown[]).forEach((value, i) => {
        if (!Array.isArray(value)) return;
        const members = seen.get(list[i]![1])!;
        for (let j = 0; j + 1 < value.length; j += 2) members.set(String(value[j]), Number(value[j + 1]) / 1000);
      });
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop.catch(() => undefined);
      redis.disconnect();
      return new Map([...seen].map(([name, members]) => [name, [...members.values()].sort((a, b) => a - b)]));
    },
  };
}
