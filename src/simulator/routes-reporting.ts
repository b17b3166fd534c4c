import { insertArrival, removeAndComplete, removeWhilePaging } from './drift.ts';
import { dateRange, parseBound, selectResults } from './results-query.ts';
import type { ApiResult, ApiUser } from './state.ts';
import { getResult, metaOf, resultJson, seatsInUse } from './state.ts';
import type { FieldProblem, Reply, RouteRequest } from './reply.ts';
import { apiError, envelopeJson, invalidModel, isGuid, json, rawJson, readPage } from './reply.ts';
import type { Runtime } from './runtime.ts';

/** GET handlers of the reporting side (courses, filters, groups, results, users, seats). */

export const PAGE_SIZE = 50;

export function getCourses(rt: Runtime, req: RouteRequest): Reply {
  const page = readPage(req.query);
  if (typeof page !== 'number') return page;
  const categoryType = req.query.get('categoryType')?.trim().toLowerCase() || undefined;
  const name = req.query.get('name')?.trim().toLowerCase() || undefined;
  const courses = rt.state.courses.filter(
    (c) =>
      (categoryType === undefined || c.categories.some((k) => k.type.toLowerCase() === categoryType)) &&
      (name === undefined || c.name.toLowerCase().includes(name)),
  );
  // All courses come on page 1; a later page is empty.
  const shown = page === 1 ? courses : [];
  return rawJson(envelopeJson(shown.map((c) => JSON.stringify(c)), page, courses.length));
}

export function getFilters(rt: Runtime, req: RouteRequest): Reply {
  const page = readPage(req.query);
  if (typeof page !== 'number') return page;
  const shown = page === 1 ? rt.state.filters : [];
  return rawJson(envelopeJson(shown.map((f) => JSON.stringify(f)), page, rt.state.filters.length));
}

/**
 * GET groups (vendor only): `{id, name, courses[{id, name}]}`, 50 a page without links
 * (like users). A course still listed by GET courses shows its current name.
 */
export function getGroups(rt: Runtime, req: RouteRequest): Reply | undefined {
  if (!rt.state.groupsEndpoint) return undefined;
  const page = readPage(req.query);
  if (typeof page !== 'number') return page;
  const names = new Map(rt.state.courses.map((c) => [c.id, c.name]));
  const from = (page - 1) * PAGE_SIZE;
  const shown = rt.state.groups.slice(from, from + PAGE_SIZE);
  const entities = shown.map((g) => JSON.stringify({ id: g.id, name: g.name, courses: g.courses.map((c) => ({ id: c.id, name: names.get(c.id) ?? c.name })) }));
  return rawJson(envelopeJson(entities, page, rt.state.groups.length));
}

/** The two ways the malformed-record fault spoils a record, alternating by record. */
function malformedJson(result: ApiResult, seq: number, every: number): string {
  if (Math.floor(seq / every) % 2 === 1) return JSON.stringify({ ...result, id: 'not-a-guid' });
  return JSON.stringify({ ...result, score: result.score === null ? 'n/a' : String(result.score) });
}

/** A result as served, spoiled when the malformed-record fault picks it (in list pages and by id alike). */
function servedResultJson(rt: Runtime, result: ApiResult): string {
  const every = rt.faults.malformedResultEvery;
  if (every > 0) {
    const seq = metaOf(rt.state, result).seq;
    if (seq % every === 0) return malformedJson(result, seq, every);
  }
  return resultJson(rt.state, result);
}

function queryKey(part: string): string {
  const raw = part.split('=', 1)[0] ?? '';
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return raw;
  }
}

/** The next page's href: the original query (as the client encoded it) with page replaced. */
function nextHref(rt: Runtime, req: RouteRequest, path: string, nextPage: number): string {
  const origin = rt.faults.foreignNextLink ? `http://evil.invalid:${rt.port}` : req.origin;
  if (rt.faults.dropFiltersInNextLink) return `${origin}${path}?page=${nextPage}`;
  const parts = req.rawQuery.split('&').filter((p) => p !== '' && queryKey(p) !== 'page');
  parts.push(`page=${nextPage}`);
  return `${origin}${path}?${parts.join('&')}`;
}

export function getResults(rt: Runtime, req: RouteRequest): Reply {
  const page = readPage(req.query);
  if (typeof page !== 'number') return page;
  const problems: FieldProblem[] = [];
  const rawStart = req.query.get('startDate');
  const rawEnd = req.query.get('endDate');
  const start = rawStart === null || rawStart === '' ? undefined : parseBound(rawStart);
  const end = rawEnd === null || rawEnd === '' ? undefined : parseBound(rawEnd);
  const dateOnly = rt.state.dateBounds === 'date-only';
  if (rawStart && (!start || (dateOnly && !start.dateOnly))) problems.push({ field: 'startDate', message: `The value '${rawStart}' is not valid.` });
  if (rawEnd && (!end || (dateOnly && !end.dateOnly))) problems.push({ field: 'endDate', message: `The value '${rawEnd}' is not valid.` });
  const filters = [...req.query.getAll('reportingFilters[]'), ...req.query.getAll('reportingFilters')].filter((f) => f !== '');
  for (const f of filters) if (!isGuid(f)) problems.push({ field: 'reportingFilters', message: `The value '${f}' is not valid.` });
  if (problems.length > 0) return invalidModel(problems);

  const range = dateRange(start, end, rt.state.dateBounds);
  // A page beyond the end (asked for ahead) is not a page of results: it moves no fault on.
  const pageFrom = (page - 1) * PAGE_SIZE;
  const served = pageFrom < selectResults(rt.state, range, filters).total ? ++rt.resultsPagesServed : 0;
  // Arrivals come between the client's requests, so a page always shows those before it.
  if (served > 0 && rt.faults.driftEvery > 0 && served % rt.faults.driftEvery === 0) {
    for (let i = 0; i < rt.faults.driftCount; i++) insertArrival(rt, range, filters);
  }
  const selection = selectResults(rt.state, range, filters);
  const from = pageFrom;
  const items = from >= selection.total ? [] : selection.slice(from, from + PAGE_SIZE);
  const entities = items.map((r) => servedResultJson(rt, r));
  const links = from + PAGE_SIZE < selection.total ? [{ type: 'Next Page', href: nextHref(rt, req, '/api/v2/results', page + 1), method: 'GET' }] : [];
  const reply = rawJson(envelopeJson(entities, page, selection.total, links));

  const removing = rt.faults.removeEvery > 0 && (rt.faults.removeLimit === 0 || rt.resultsRemoved < rt.faults.removeLimit);
  if (removing && served > 0 && served % rt.faults.removeEvery === 0) removeWhilePaging(rt, range, filters, Math.min(from + PAGE_SIZE, selection.total));
  if (rt.faults.pairEvery > 0 && served > 0 && served % rt.faults.pairEvery === 0) removeAndComplete(rt, range, filters, Math.min(from + PAGE_SIZE, selection.total));
  return reply;
}

export function getResultById(rt: Runtime, req: RouteRequest): Reply {
  const id = req.params[0] ?? '';
  const result = isGuid(id) ? getResult(rt.state, id) : undefined;
  if (!result) return apiError('RESULT_NOT_FOUND', `No result with id '${id}' was found.`);
  return rawJson(servedResultJson(rt, result));
}

export function getUsers(rt: Runtime, req: RouteRequest): Reply | undefined {
  if (!rt.state.usersEndpoint) return undefined;
  const page = readPage(req.query);
  if (typeof page !== 'number') return page;
  const email = req.query.get('email')?.trim().toLowerCase() || undefined;
  const orgId = req.query.get('orgId')?.trim().toLowerCase() || undefined;
  const userId = req.query.get('userId')?.trim().toLowerCase() || undefined;
  let users: ApiUser[];
  if (userId !== undefined) {
    const u = rt.state.usersById.get(userId);
    users = u ? [u] : [];
  } else {
    users = rt.state.users;
  }
  if (email !== undefined) users = users.filter((u) => u.email.toLowerCase().includes(email) || u.username.toLowerCase().includes(email));
  if (orgId !== undefined) users = users.filter((u) => (u.organisationIdentifier ?? '').toLowerCase().includes(orgId));
  const from = (page - 1) * PAGE_SIZE;
  const shown = users.slice(from, from + PAGE_SIZE);
  // The vendor says users pages carry no links at present: clients page by number.
  return rawJson(envelopeJson(shown.map((u) => JSON.stringify(u)), page, users.length));
}

export function getSeats(rt: Runtime): Reply {
  if (!rt.state.seats.unlimitedPlan) return apiError('NO_UNLIMITED_PLAN', 'The organisation is not on an unlimited-use plan.');
  return json({ seatsInUse: seatsInUse(rt.state), totalSeats: rt.state.seats.totalSeats });
}
