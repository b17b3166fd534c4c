import type { ArrivalPlace } from './faults.ts';
import { selectResults, type DateRange, type ResultsSelection } from './results-query.ts';
import type { Runtime } from './runtime.ts';
import type { ApiResult, ApiUser } from './state.ts';
import { addResult, findGroup, metaOf, removeResult } from './state.ts';

/**
 * The data-changing faults of GET results (SimulatorFaults.driftEvery, removeEvery and
 * pairEvery): results arriving in, and removed from, the listing of the query being
 * paged, or completed now while one the reader passed is removed. Each id
 * added or removed is recorded (Runtime.resultChanges), so a test can tell which
 * results were on the platform before a run and still are after it.
 */

const DAY_MS = 86_400_000;
/** An arrival at either end is dated up to this much beyond the result it goes past. */
const NUDGE_MS = 60_000;

/** The instants a range keeps, as inclusive bounds (infinite when open). */
function inclusiveBounds(range: DateRange): { min: number; max: number } {
  return {
    min: range.lo === undefined ? -Infinity : range.loInclusive ? range.lo : range.lo + 1,
    max: range.hi === undefined ? Infinity : range.hiInclusive ? range.hi : range.hi - 1,
  };
}

function datedAt(rt: Runtime, selection: ResultsSelection, index: number): number | undefined {
  const result = selection.slice(index, index + 1)[0];
  return result === undefined ? undefined : metaOf(rt.state, result).t ?? undefined;
}

/**
 * When an arrival at `place` is completed (null: a just-started, undated result), or
 * undefined when the range holds no instant at all. Draws the PRNG once for the tail
 * (as before `arrivalsAt` existed, so seeded runs repeat) and for the head and middle.
 */
function arrivalDate(rt: Runtime, range: DateRange, filters: string[], place: Exclude<ArrivalPlace, 'random'>): number | null | undefined {
  const { state } = rt;
  const bounded = range.lo !== undefined || range.hi !== undefined;
  const { min, max } = inclusiveBounds(range);
  if (min > max) return undefined;
  const selection = selectResults(state, range, filters);
  const first = selection.dated > 0 ? datedAt(rt, selection, 0) : undefined;
  const newest = selection.dated > 0 ? datedAt(rt, selection, selection.dated - 1) : undefined;
  const listStart = Date.parse(`${state.resultsFrom}T00:00:00.000Z`);
  if (place === 'tail') {
    // Undated queries list just-started results last.
    if (!bounded) return null;
    const nudge = 1 + Math.floor(state.prng.next() * NUDGE_MS);
    const newestOfAll = state.results[state.results.length - 1];
    const newestOfAllT = newestOfAll ? metaOf(state, newestOfAll).t! : Date.parse(`${state.resultsTo}T12:00:00.000Z`);
    // A completion now, when the range reaches it; else the newest end of this range.
    const now = newestOfAllT + nudge;
    if (now <= max) return Math.max(min, now);
    return Math.min(max, Math.max(min, (newest ?? min) + nudge));
  }
  const r = state.prng.next();
  if (place === 'middle' && first !== undefined && newest !== undefined && newest > first) {
    const late = newest - Math.floor((1 + 3 * r) * DAY_MS);
    return late > first ? late : first + Math.floor(r * (newest - first));
  }
  // The head (and the middle of a listing with under two dated results).
  if (first !== undefined) return Math.max(min, first - 1 - Math.floor(r * NUDGE_MS));
  if (Number.isFinite(min)) return min;
  return Math.min(max, listStart);
}

/** An arrival (see SimulatorFaults.arrivalsAt), matching the query's filters and range. */
export function insertArrival(rt: Runtime, range: DateRange, filters: string[]): void {
  const { state } = rt;
  const rng = state.prng;
  if (state.users.length === 0 || state.courses.length === 0) return;
  const place = rt.faults.arrivalsAt === 'random' ? rng.pick(['head', 'middle', 'tail'] as const) : rt.faults.arrivalsAt;
  const t = arrivalDate(rt, range, filters, place);
  if (t === undefined) return;
  addArrival(rt, filters, t);
}

/**
 * The pair fault (SimulatorFaults.pairEvery): a result the reader has passed is deleted
 * and another is completed now, between the same two pages.
 */
export function removeAndComplete(rt: Runtime, range: DateRange, filters: string[], served: number): void {
  const { state } = rt;
  const selection = selectResults(state, range, filters);
  const span = Math.min(served, selection.total);
  if (span <= 0 || state.users.length === 0 || state.courses.length === 0) return;
  const index = Math.floor(state.prng.next() * span);
  const victim = selection.slice(index, index + 1)[0];
  if (!victim || !removeResult(state, victim.id)) return;
  rt.resultsRemoved++;
  rt.resultChanges.removed.push(victim.id);
  addArrival(rt, filters, Date.now());
}

/** A result completed at instant `t` (null: just started), by a user and with answers that match `filters`. */
function addArrival(rt: Runtime, filters: string[], t: number | null): void {
  const { state } = rt;
  const rng = state.prng;
  const dateCompleted = t === null ? null : new Date(t).toISOString();
  let user: ApiUser = rng.pick(state.users);
  const resultFilters: string[] = [];
  const firstFilter = filters[0]?.toLowerCase();
  if (firstFilter !== undefined) {
    const group = findGroup(state, firstFilter);
    const members = group ? [...group.memberIds] : [];
    const memberUser = members.length === 0 ? undefined : state.usersById.get(rng.pick(members));
    if (memberUser) user = memberUser;
    else resultFilters.push(firstFilter);
  }
  const course = rng.pick(state.courses);
  const added: ApiResult = addResult(state, {
    userId: user.id,
    courseId: course.id,
    dateCompleted,
    isComplete: dateCompleted !== null,
    score: dateCompleted === null ? null : rng.int(0, 100),
    maximumScore: 100,
    passRate: course.passRate,
    resultFilters,
  });
  rt.resultChanges.added.push(added.id);
}

/**
 * A removal (see SimulatorFaults.removeAt) after a page was served: `served` is how
 * many of the listing the pages up to this one showed.
 */
export function removeWhilePaging(rt: Runtime, range: DateRange, filters: string[], served: number): void {
  const selection = selectResults(rt.state, range, filters);
  const span = rt.faults.removeAt === 'anywhere' ? selection.total : Math.min(served, selection.total);
  if (span <= 0) return;
  const index = Math.floor(rt.state.prng.next() * span);
  const victim = selection.slice(index, index + 1)[0];
  if (victim && removeResult(rt.state, victim.id)) {
    rt.resultsRemoved++;
    rt.resultChanges.removed.push(victim.id);
  }
}
